/*
 * config.c — the fleet's YAML run configuration: the schema table and what
 * it drives (defaults, parsing with libyaml's document API so every node
 * carries its line and column, range and oneof checks, the printed config,
 * the digest's execution-only keys and the copy to and from RunConfig), and
 * the rules between keys.
 *
 * The schema is data: keys[] has one row per key (config.h, sf_config_key).
 * Scalars (text, numbers, booleans) are handled by one generic path; the
 * few structured types (an encounter mix, a list of names, a c schedule)
 * have small dedicated readers, printers and copies, chosen by the row's
 * type. A row's RunConfig field is found by name in protobuf-c's
 * descriptors, so the copy between the struct and the message is one loop
 * over the rows. Rules between keys are hand-written functions in rules[],
 * each named by the key it reports.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "common/fetch.h"
#include "common/io.h"
#include "common/search_defaults.h"
#include "common/sha256.h"
#include "engine/engine.h"
#include "fleet/config.h"
#include "fleet/wire.h"

/* ---- schema ------------------------------------------------------------- */

/* The member's offset; a member whose type does not match the row's type
 * does not compile (no _Generic association). */
#define AT(m, T)   _Generic(((sf_run_config *)0)->m, T : offsetof(sf_run_config, m))
#define SIZE(m)    sizeof(((sf_run_config *)0)->m)
#define ENTRIES(m) (int)(SIZE(m) / sizeof(((sf_run_config *)0)->m[0]))

#define ROW(path, wire, type, off, size, count_off, cap, lo, hi, oneof, def, lookup, flags) \
    { path, wire, type, off, size, count_off, cap, lo, hi, oneof, def, lookup, flags }
#define K_STR(path, wire, m, minlen, oneof, def, flags) \
    ROW(path, wire, SF_CFG_STR, AT(m, char *), SIZE(m), 0, 0, minlen, 0, oneof, def, NULL, flags)
#define K_SHA256(path, wire, m, def, flags) \
    ROW(path, wire, SF_CFG_SHA256, AT(m, char *), SIZE(m), 0, 0, 0, 0, NULL, def, NULL, flags)
#define K_NUM(type, T, path, wire, m, lo, hi, def, flags) \
    ROW(path, wire, type, AT(m, T), SIZE(m), 0, 0, lo, hi, NULL, def, NULL, flags)
#define K_U32(...)                        K_NUM(SF_CFG_U32, uint32_t, __VA_ARGS__)
#define K_U64(...)                        K_NUM(SF_CFG_U64, uint64_t, __VA_ARGS__)
#define K_I32(...)                        K_NUM(SF_CFG_I32, int, __VA_ARGS__)
#define K_F64(...)                        K_NUM(SF_CFG_F64, double, __VA_ARGS__)
#define K_BOOL(path, wire, m, def, flags) K_NUM(SF_CFG_BOOL, int, path, wire, m, 0, 1, def, flags)
#define K_LIST(type, T, path, wire, m, n, lookup, def, flags) \
    ROW(path, wire, type, AT(m, T), SIZE(m), AT(n, int), ENTRIES(m), 0, 0, NULL, def, lookup, flags)
#define K_ENCOUNTERS(path, wire, m, n, flags) \
    K_LIST(SF_CFG_ENCOUNTERS, sf_cfg_encounter *, path, wire, m, n, NULL, NULL, flags)
#define K_NAMES(path, wire, m, n, lookup, def, flags) \
    K_LIST(SF_CFG_NAMES, char(*)[SF_CFG_NAME], path, wire, m, n, lookup, def, flags)
#define K_CSCHED(path, wire, m, n, def, flags) \
    K_LIST(SF_CFG_CSCHED, sf_cfg_csched *, path, wire, m, n, NULL, def, flags)

#define REQ      SF_CFG_REQUIRED
#define EXEC     SF_CFG_EXEC
#define SELFPLAY SF_CFG_SELFPLAY
#define GATE     SF_CFG_GATE
#define LOOP     SF_CFG_LOOP

/* A search knob's default text, spelled from its one home
 * (common/search_defaults.h): the library's default, or the fleet's where
 * the two differ by purpose. search.c_schedule's default is the library's
 * UCT budget table, "BELOW:C|BELOW:C|C". */
#define SEARCH_DEF(knob) SF_STRINGIFY(SF_SEARCH_DEFAULT_##knob)
#define FLEET_DEF(knob)  SF_STRINGIFY(SF_FLEET_DEFAULT_##knob)
/* clang-format off */
#define C_SCHEDULE_DEF                                                     \
    SEARCH_DEF(UCT_BUDGET_MID) ":" SEARCH_DEF(UCT_C_LOW) "|"              \
    SEARCH_DEF(UCT_BUDGET_HIGH) ":" SEARCH_DEF(UCT_C_MID) "|" SEARCH_DEF(UCT_C_HIGH)
/* clang-format on */

/* Every key, in the order `sf-fleet check` prints them. Columns: the YAML
 * path, the RunConfig field (NULL: the same as the path), the member, the
 * range (text: the least length, and the allowed values), the default as
 * printed (NULL: none), flags. docs/operator.md's schema table lists the
 * same keys and defaults (test-config compares them). */
static const sf_config_key keys[] = {
    K_STR("run.name", "name", name, 1, NULL, NULL, REQ),
    K_STR("run.output_dir", "output_dir", output_dir, 1, NULL, "runs/<name>", EXEC),
    K_U64("run.seed", "run_seed", run_seed, 0, 1.8e19, "1", 0),
    K_STR("run.kind", "kind", kind, 1, "selfplay|gate|loop", "selfplay", 0),
    K_U64("seeds.start", "seed_start", seed_start, 0, 1.8e19, "0", 0),
    K_U64("seeds.count", "seed_count", seed_count, 1, 1e12, NULL, REQ),
    K_U32("seeds.job_size", "job_size", job_size, 1, 100000, "8", 0),
    K_STR("play.mode", NULL, play.mode, 1, "fights|gauntlet", "fights", 0),
    K_ENCOUNTERS("play.encounters", NULL, play.encounters, play.n_encounters, 0),
    K_STR("play.deck", NULL, play.deck, 1, NULL, "Strike*5,Defend*4,Bash", 0),
    K_NAMES("play.relics", NULL, play.relics, play.n_relics, sf_relic_lookup, "Burning Blood", 0),
    K_NAMES("play.potions", NULL, play.potions, play.n_potions, sf_potion_lookup, NULL, 0),
    K_U32("play.hp", NULL, play.hp, 1, 999, "80", 0),
    K_U32("play.max_hp", NULL, play.max_hp, 1, 999, "80", 0),
    K_U32("play.ascension", NULL, play.ascension, 0, SF_MAX_ASCENSION, "0", 0),
    K_U32("play.max_turns", NULL, play.max_turns, 1, SF_MAX_TURNS_LIMIT,
          SF_STRINGIFY(SF_MAX_TURNS_DEFAULT), 0),
    K_STR("play.start", NULL, play.start, 1, "starter|rewards", "starter", 0),
    K_STR("play.picker", NULL, play.picker, 1, "random|greedy", "greedy", 0),
    K_U32("search.simulations", NULL, search.simulations, 1, 10000000, FLEET_DEF(SIMULATIONS), 0),
    K_U32("search.trees", NULL, search.trees, 1, 64, FLEET_DEF(TREES), 0), /* SF_SEARCH_MAX_TREES */
    K_CSCHED("search.c_schedule", NULL, search.c_schedule, search.n_c_schedule, C_SCHEDULE_DEF, 0),
    K_F64("search.widening_c", NULL, search.widening_c, 0.01, 1000, SEARCH_DEF(WIDENING_C), 0),
    K_F64("search.widening_alpha", NULL, search.widening_alpha, 0, 1, SEARCH_DEF(WIDENING_ALPHA),
          0),
    K_F64("search.rollout_tau", NULL, search.rollout_tau, 0.001, 1e6, SEARCH_DEF(ROLLOUT_TAU), 0),
    K_STR("search.evaluator", NULL, search.evaluator, 1, "rollout|net", "rollout", SELFPLAY),
    /* a network leaf's value (1 - mix) * network + mix * rollout
     * (search.h leaf_mix); the network sides of gates and loops too */
    K_F64("search.leaf_mix", NULL, search.leaf_mix, 0, 1, SEARCH_DEF(LEAF_MIX), 0),
    /* PUCT's c1 for a network search (search.h puct_c1); 0 keeps the
     * search's default, so configs that never name it keep their digest */
    K_F64("search.puct_c", NULL, search.puct_c, 0, 100, "0", 0),
    K_BOOL("search.gumbel", NULL, search.gumbel, "false", 0),
    K_U32("search.gumbel_m", NULL, search.gumbel_m, 1, 64, SEARCH_DEF(GUMBEL_M), 0),
    K_F64("search.gumbel_c_visit", NULL, search.gumbel_c_visit, 0, 1e6, SEARCH_DEF(GUMBEL_C_VISIT),
          0),
    K_F64("search.gumbel_c_scale", NULL, search.gumbel_c_scale, 0, 1e6, SEARCH_DEF(GUMBEL_C_SCALE),
          0),
    K_U32("search.teacher_rollouts", NULL, search.teacher_rollouts, 0, 10000, "0", SELFPLAY | LOOP),
    K_BOOL("search.clairvoyant", NULL, search.clairvoyant, "false", 0),
    K_F64("search.cvar_alpha", NULL, search.cvar_alpha, 0.001, 1, FLEET_DEF(CVAR_ALPHA), 0),
    K_F64("search.cvar_lambda", NULL, search.cvar_lambda, 0, 1, SEARCH_DEF(CVAR_LAMBDA), 0),
    K_U32("search.max_rollout_plies", NULL, search.max_rollout_plies, 1, 100000,
          SEARCH_DEF(ROLLOUT_MAX_PLIES), 0),
    /* the model is pinned by its SHA-256, not by where the file is */
    K_STR("model.bundle", NULL, model.bundle, 0, NULL, NULL, EXEC | SELFPLAY),
    K_SHA256("model.sha256", NULL, model.sha256, NULL, SELFPLAY),
    /* or followed: each job is bound to the champion of a registry when it
     * is first leased (docs/loop.md "Following the champion") */
    K_STR("model.champion", NULL, model.champion, 0, NULL, NULL, EXEC | SELFPLAY),
    /* without a shared filesystem: where workers (--fetch-models) and
     * gpu-evald (--models-url) fetch a bundle by its SHA-256, and the
     * random spread of their first requests (common/fetch.h) */
    K_STR("model.url", NULL, model.url, 0, NULL, NULL, EXEC),
    K_U32("model.stagger_s", NULL, model.stagger_s, 0, SF_FETCH_MAX_STAGGER_S, "30", EXEC),
    K_STR("evald.endpoint", NULL, evald.endpoint, 1, NULL, "tcp://127.0.0.1:5557", EXEC),
    K_BOOL("evald.spawn", NULL, evald.spawn, "false", EXEC),
    K_STR("evald.backend", NULL, evald.backend, 1, "cpu|cuda", "cpu", EXEC),
    K_U32("evald.max_batch", NULL, evald.max_batch, 1, 65536, "256", EXEC),
    K_U32("evald.max_wait_us", NULL, evald.max_wait_us, 0, 10000000, "500", EXEC),
    K_U32("evald.timeout_ms", NULL, evald.timeout_ms, 1, 3600000, "5000", EXEC),
    K_U32("evald.retries", NULL, evald.retries, 0, 100, "2", EXEC),
    K_U32("workers.count", NULL, workers.count, 0, 4096, "2", EXEC),
    K_U32("workers.threads", NULL, workers.threads, 1, 1024, "1", EXEC),
    K_U32("workers.fights_per_thread", NULL, workers.fights_per_thread, 1, 4096, "8", EXEC),
    K_STR("coordinator.endpoint", NULL, coordinator.endpoint, 1, NULL, "tcp://127.0.0.1:5555",
          EXEC),
    K_U32("coordinator.lease_seconds", NULL, coordinator.lease_seconds, 1, 604800, "300", EXEC),
    K_U32("coordinator.heartbeat_ms", NULL, coordinator.heartbeat_ms, 10, 600000, "1000", EXEC),
    K_U32("coordinator.heartbeat_liveness", NULL, coordinator.heartbeat_liveness, 2, 1000, "5",
          EXEC),
    K_U32("coordinator.metrics_port", NULL, coordinator.metrics_port, 0, 65535, "0", EXEC),
    K_U32("coordinator.max_workers", NULL, coordinator.max_workers, 0, 65536, "0", EXEC),
    K_I32("shard.zstd_level", NULL, shard.zstd_level, -7, 22, "3", EXEC),
    K_STR("labels.unsearched", NULL, labels.unsearched, 1, "drop|keep", "drop", SELFPLAY | LOOP),
    K_STR("champion.evaluator", NULL, champion.evaluator, 1, "rollout|net", "rollout", GATE),
    K_STR("champion.bundle", NULL, champion.bundle, 0, NULL, NULL, EXEC | GATE),
    K_SHA256("champion.sha256", NULL, champion.sha256, NULL, GATE),
    K_U32("champion.simulations", NULL, champion.simulations, 0, 10000000, "0", GATE),
    K_U32("champion.trees", NULL, champion.trees, 0, 64, "0", GATE),
    K_F64("champion.widening_c", NULL, champion.widening_c, 0, 1000, "0", GATE),
    K_F64("champion.widening_alpha", NULL, champion.widening_alpha, -1, 1, "-1", GATE),
    K_STR("champion.select", NULL, champion.select, 1, "same|auto|uct|puct|gumbel", "same", GATE),
    K_U64("champion.salt", NULL, champion.salt, 0, 1.8e19, "0", GATE),
    K_F64("champion.leaf_mix", NULL, champion.leaf_mix, -1, 1, "-1", GATE),
    K_STR("candidate.evaluator", NULL, candidate.evaluator, 1, "rollout|net", "rollout", GATE),
    K_STR("candidate.bundle", NULL, candidate.bundle, 0, NULL, NULL, EXEC | GATE),
    K_SHA256("candidate.sha256", NULL, candidate.sha256, NULL, GATE),
    K_U32("candidate.simulations", NULL, candidate.simulations, 0, 10000000, "0", GATE),
    K_U32("candidate.trees", NULL, candidate.trees, 0, 64, "0", GATE),
    K_F64("candidate.widening_c", NULL, candidate.widening_c, 0, 1000, "0", GATE),
    K_F64("candidate.widening_alpha", NULL, candidate.widening_alpha, -1, 1, "-1", GATE),
    K_STR("candidate.select", NULL, candidate.select, 1, "same|auto|uct|puct|gumbel", "same", GATE),
    K_U64("candidate.salt", NULL, candidate.salt, 0, 1.8e19, "0", GATE),
    K_F64("candidate.leaf_mix", NULL, candidate.leaf_mix, -1, 1, "-1", GATE),
    K_STR("gate.metric", NULL, gate.metric, 1, "win|score", "win", GATE | LOOP),
    K_F64("gate.alpha", NULL, gate.alpha, 1e-6, 0.5, "0.04", GATE | LOOP),
    K_F64("gate.beta", NULL, gate.beta, 1e-6, 0.5, "0.04", GATE | LOOP),
    K_F64("gate.delta0", NULL, gate.delta0, -0.999, 0.999, "0", GATE | LOOP),
    K_F64("gate.delta1", NULL, gate.delta1, -0.999, 0.999, "0.03", GATE | LOOP),
    K_U32("gate.min_pairs", NULL, gate.min_pairs, 1, 100000000, "200", GATE | LOOP),
    K_U32("gate.max_pairs", NULL, gate.max_pairs, 1, 100000000, "8000", GATE | LOOP),
    K_U32("loop.generations", NULL, loop.generations, 1, 1000, "3", LOOP),
    K_U64("loop.gate_seeds", NULL, loop.gate_seeds, 1, 1e12, "8000", LOOP),
    /* self-play simulations once the champion is a network (0: search.simulations) */
    K_U32("loop.net_simulations", NULL, loop.net_simulations, 0, 10000000, "0", LOOP),
    /* the trainer (python3 -m spirefleet.train, docs/trainer.md) */
    K_STR("train.arch", NULL, train.arch, 1, "tiny|base", "tiny", SELFPLAY | LOOP),
    K_U32("train.window_labels", NULL, train.window_labels, 1, 1000000000, "200000",
          SELFPLAY | LOOP),
    K_U32("train.steps", NULL, train.steps, 1, 100000000, "2000", SELFPLAY | LOOP),
    K_U32("train.batch", NULL, train.batch, 1, 65536, "128", SELFPLAY | LOOP),
    K_F64("train.lr", NULL, train.lr, 1e-9, 1, "0.001", SELFPLAY | LOOP),
    K_F64("train.weight_decay", NULL, train.weight_decay, 0, 1, "0.0001", SELFPLAY | LOOP),
    K_U32("train.warmup", NULL, train.warmup, 0, 100000000, "100", SELFPLAY | LOOP),
    K_F64("train.clip", NULL, train.clip, 0, 1e6, "1", SELFPLAY | LOOP),
    K_F64("train.val_fraction", NULL, train.val_fraction, 0.001, 0.9, "0.1", SELFPLAY | LOOP),
    K_U32("train.seed", NULL, train.seed, 0, 4294967295.0, "0", SELFPLAY | LOOP),
    K_F64("train.weight_value", NULL, train.weight_value, 0, 1000, "1", SELFPLAY | LOOP),
    K_F64("train.weight_policy", NULL, train.weight_policy, 0, 1000, "1", SELFPLAY | LOOP),
    K_F64("train.weight_forecast", NULL, train.weight_forecast, 0, 1000, "0.25", SELFPLAY | LOOP),
    K_F64("train.weight_win", NULL, train.weight_win, 0, 1000, "0.25", SELFPLAY | LOOP),
    /* the search's completed-Q of the chosen move, an auxiliary target of
     * the trunk (docs/trainer.md "Auxiliary targets") */
    K_F64("train.weight_q", NULL, train.weight_q, 0, 1000, "0", SELFPLAY | LOOP),
    K_F64("train.surprise", NULL, train.surprise, 0, 1, "0", SELFPLAY | LOOP),
    K_U32("train.checkpoint_every", NULL, train.checkpoint_every, 0, 100000000, "500",
          SELFPLAY | LOOP),
    K_U32("train.canary_positions", NULL, train.canary_positions, 1, 1024, "16", SELFPLAY | LOOP),
    /* the weights of the checkpoint (or the end) with the lowest weighted
     * validation loss, or those of the last step */
    K_STR("train.keep", NULL, train.keep, 1, "best|last", "best", SELFPLAY | LOOP),
    /* sbatch options of `sf-fleet slurm` (sf-fleet/slurm.h); RunConfig
     * carries them as fields of its own (fleet.proto says why) */
    K_STR("slurm.partition", "slurm_partition", slurm.partition, 0, NULL, NULL, EXEC),
    K_STR("slurm.gpu_partition", "slurm_gpu_partition", slurm.gpu_partition, 0, NULL, NULL, EXEC),
    K_STR("slurm.account", "slurm_account", slurm.account, 0, NULL, NULL, EXEC),
    K_STR("slurm.qos", "slurm_qos", slurm.qos, 0, NULL, NULL, EXEC),
    K_STR("slurm.coordinator_time", "slurm_coordinator_time", slurm.coordinator_time, 0, NULL, NULL,
          EXEC),
    K_STR("slurm.worker_time", "slurm_worker_time", slurm.worker_time, 0, NULL, NULL, EXEC),
    K_STR("slurm.evald_time", "slurm_evald_time", slurm.evald_time, 0, NULL, NULL, EXEC),
    K_U32("slurm.workers", "slurm_workers", slurm.workers, 1, 100000, "4", EXEC),
    K_U32("slurm.cpus_per_worker", "slurm_cpus_per_worker", slurm.cpus_per_worker, 0, 4096, "0",
          EXEC),
    K_STR("slurm.mem_per_worker", "slurm_mem_per_worker", slurm.mem_per_worker, 0, NULL, NULL,
          EXEC),
    K_U32("slurm.gpus_per_evald", "slurm_gpus_per_evald", slurm.gpus_per_evald, 1, 16, "1", EXEC),
    K_U32("slurm.signal_seconds", "slurm_signal_seconds", slurm.signal_seconds, 0, 65535, "300",
          EXEC),
    K_STR("slurm.workdir", "slurm_workdir", slurm.workdir, 0, NULL, NULL, EXEC),
    K_STR("slurm.bin_dir", "slurm_bin_dir", slurm.bin_dir, 0, NULL, NULL, EXEC),
    /* CURVE keys (common/zsec.h); RunConfig carries them as fields of its
     * own, like slurm.* */
    K_STR("security.mode", "security_mode", security.mode, 1, "curve|none", "curve", EXEC),
    K_STR("security.keys", "security_keys", security.keys, 0, NULL, NULL, EXEC),
    K_BOOL("security.metrics_public", "security_metrics_public", security.metrics_public, "false",
           EXEC),
    K_F64("security.audit_fraction", "security_audit_fraction", security.audit_fraction, 0, 1,
          "0.05", EXEC),
    K_U32("security.audit_first_jobs", "security_audit_first_jobs", security.audit_first_jobs, 0,
          1000, "1", EXEC),
    K_U32("security.max_workers_per_key", "security_max_workers_per_key",
          security.max_workers_per_key, 1, 65536, "256", EXEC),
    K_F64("security.max_lease_share", "security_max_lease_share", security.max_lease_share, 0.01, 1,
          "0.5", EXEC),
};
#define NKEYS (sizeof keys / sizeof keys[0])

#undef REQ
#undef EXEC
#undef SELFPLAY
#undef GATE
#undef LOOP

const sf_config_key *sf_config_schema(size_t *n) {
    *n = NKEYS;
    return keys;
}

static int is_list(sf_config_type t) {
    return t == SF_CFG_ENCOUNTERS || t == SF_CFG_NAMES || t == SF_CFG_CSCHED;
}

static const char *wire_of(const sf_config_key *f) {
    return f->wire ? f->wire : f->path;
}

/* The row of `path`, or NULL. */
static const sf_config_key *key_of(const char *path) {
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(keys[i].path, path))
            return &keys[i];
    return NULL;
}

/* The length of the section part of a row's path ("search" of "search.x"). */
static size_t section_len(const sf_config_key *f) {
    const char *dot = strchr(f->path, '.');
    return dot ? (size_t)(dot - f->path) : strlen(f->path);
}

static int in_section(const sf_config_key *f, const char *section) {
    size_t l = section_len(f);
    return strlen(section) == l && !strncmp(f->path, section, l);
}

/* Whether row i starts a section: the first row, or one whose section differs
 * from the row before. */
static int starts_section(size_t i) {
    size_t l = section_len(&keys[i]);
    return i == 0 || l != section_len(&keys[i - 1]) || strncmp(keys[i].path, keys[i - 1].path, l);
}

/* A list's entry count, beside it in the struct. */
static int *count_of(const sf_config_key *f, sf_run_config *c) {
    return (int *)(void *)((char *)c + f->count_off);
}

static int count_in(const sf_config_key *f, const sf_run_config *c) {
    return *(const int *)(const void *)((const char *)c + f->count_off);
}

/* ---- values ------------------------------------------------------------- */

/* A scalar is read one way: as the YAML 1.2 core schema reads a plain
 * scalar (YAML 1.2 §10.3.2), refusing the spellings that YAML 1.1 (and so
 * PyYAML and many other readers) reads differently, so that the trainer, an
 * operator's script and the fleet never disagree on a value:
 *   boolean  true, True, TRUE, false, False, FALSE. YAML 1.1's y, yes, on,
 *            n, no, off (any case) are refused: YAML 1.2 reads them as text.
 *   integer  [-+]?[0-9]+ in decimal, without a leading zero (010 is 8 in
 *            YAML 1.1 and 10 in YAML 1.2), without '_' (1_000 is 1000 in
 *            YAML 1.1 and text in YAML 1.2) or ':' (1:30 is 90 in YAML
 *            1.1); hexadecimal 0x10, octal 0o10 and YAML 1.1's binary 0b10
 *            are refused rather than read (write the decimal), and so is a
 *            float's spelling (1e3, 1.0) for an integer key.
 *   number   an integer as above, or [-+]?(.5|5|5.|5.5)([eE][-+]?[0-9]+)?;
 *            .inf and .nan are no key's value, and inf, nan (text in YAML)
 *            are refused like any other word.
 * A quoted or block scalar is text in every YAML, never a number or a
 * boolean: the YAML reader refuses it for those keys before the text comes
 * here (set_field). The defaults and sf_config_from_proto()'s printed
 * values come through the same checks, so they must be spelled this way
 * too (sf_config_schema_check() tries every default). */

static int parse_bool(const char *s, int *out) {
    static const char *const t[] = {"true", "True", "TRUE"};
    static const char *const f[] = {"false", "False", "FALSE"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i]))
            return *out = 1, 1;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (!strcmp(s, f[i]))
            return *out = 0, 1;
    return 0;
}

/* Whether `s` is one of YAML 1.1's other booleans (yaml.org/type/bool). */
static int yaml11_bool(const char *s) {
    static const char *const w[] = {"y", "yes", "on", "n", "no", "off"};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (!strcasecmp(s, w[i]))
            return 1;
    return 0;
}

static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

#define WHY(...) (snprintf(why, why_cap, __VA_ARGS__), -1)

/* Whether `v` spells a number the one way above (`integer`: an integer).
 * Returns 0, or -1 with what is wrong in `why`. */
static int number_spelling(const char *v, int integer, char *why, size_t why_cap) {
    const char *want = integer ? "an integer" : "a number";
    const char *p = v + (v[0] == '-' || v[0] == '+');
    if ((p[0] == '0' && (p[1] == 'x' || p[1] == 'o' || p[1] == 'X' || p[1] == 'b')) && p[2]) {
        const char *base = p[1] == 'o' ? "octal" : p[1] == 'b' ? "binary" : "hexadecimal";
        char *end;
        errno = 0;
        unsigned long long u = strtoull(p + 2, &end, p[1] == 'o' ? 8 : p[1] == 'b' ? 2 : 16);
        if (!*end && !errno && p == v && isxdigit((unsigned char)p[2]))
            return WHY("'%s' is %s (%llu); write the number in decimal", v, base, u);
        return WHY("expected %s, got '%s' (write the number in decimal)", want, v);
    }
    if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF") || !strcmp(v, ".nan") ||
        !strcmp(v, ".NaN") || !strcmp(v, ".NAN"))
        return WHY("expected a finite number, got '%s'", v);
    size_t ints = 0, fracs = 0, exps = 0, unders = 0;
    int dot = 0, exp = 0, colon = 0;
    const char *q = p;
    for (; is_digit(*q) || *q == '_' || *q == ':'; q++) {
        unders += *q == '_';
        colon += *q == ':';
        ints += is_digit(*q);
    }
    if (*q == '.') {
        dot = 1;
        for (q++; is_digit(*q) || *q == '_'; q++) {
            unders += *q == '_';
            fracs += is_digit(*q);
        }
    }
    if ((*q == 'e' || *q == 'E') && (ints || fracs)) {
        exp = 1;
        q += q[1] == '-' || q[1] == '+';
        for (q++; is_digit(*q); q++)
            exps++;
    }
    if (*q || (!ints && !fracs) || (exp && !exps) || (colon && (dot || exp)))
        return WHY("expected %s, got '%s'", want, v);
    if (colon)
        return WHY("'%s' is a base-60 number in YAML 1.1 and text in YAML 1.2; write the number "
                   "in decimal",
                   v);
    if (unders) {
        char plain[64];
        size_t n = 0;
        for (const char *s = v; *s && n + 1 < sizeof plain; s++)
            if (*s != '_')
                plain[n++] = *s;
        plain[n] = '\0';
        return WHY("'%s' is %s in YAML 1.1 and text in YAML 1.2; write %s (without '_')", v, plain,
                   plain);
    }
    if (!dot && !exp && ints > 1 && p[0] == '0')
        return WHY("'%s' has a leading zero, which YAML 1.1 reads as octal and YAML 1.2 as "
                   "decimal; write it without the leading zero",
                   v);
    if (integer && (dot || exp)) {
        double d = strtod(v, NULL);
        if (d == floor(d) && fabs(d) < 1e19)
            return WHY("expected an integer, got the float '%s' (write %.0f)", v, d);
        return WHY("expected an integer, got '%s'", v);
    }
    return 0;
}

static int oneof_ok(const char *oneof, const char *v) {
    size_t lv = strlen(v);
    for (const char *p = oneof; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        if (l == lv && !strncmp(p, v, l))
            return 1;
        p += l + (bar ? 1 : 0);
    }
    return 0;
}

/* Convert the text `v` of a scalar key with the row's checks and store it
 * in `c`. Returns 0, or -1 with what is wrong in `why` (the words after
 * "key: "). The YAML reader, the defaults and sf_config_from_proto() all
 * come through here, so a value means and is checked the same everywhere. */
static int store_scalar(const sf_config_key *f, const char *v, sf_run_config *c, char *why,
                        size_t why_cap) {
    char *dst = (char *)c + f->off;
    char *end = NULL;
    switch (f->type) {
    case SF_CFG_SHA256: {
        _Static_assert(sizeof(((sf_run_config *)0)->model.sha256) == SF_SHA256_HEX_LEN + 1,
                       "model.sha256 holds one canonical SHA-256");
        if (f->size != SF_SHA256_HEX_LEN + 1)
            return WHY("holds %zu bytes, not a SHA-256", f->size);
        if (!v[0]) { /* "" gives no pin */
            dst[0] = '\0';
            return 0;
        }
        sf_err e = {0};
        if (sf_sha256_hex_parse(v, dst, &e) != SF_OK)
            return WHY("%s", e.msg);
        return 0;
    }
    case SF_CFG_STR: {
        size_t l = strlen(v);
        if (l >= f->size)
            return WHY("too long (%zu characters, at most %zu)", l, f->size - 1);
        if ((size_t)f->lo > l)
            return WHY("must not be empty");
        if (f->oneof && !oneof_ok(f->oneof, v))
            return WHY("expected one of %s, got '%s'", f->oneof, v);
        memcpy(dst, v, l + 1);
        return 0;
    }
    case SF_CFG_BOOL: {
        int b;
        if (!parse_bool(v, &b) && yaml11_bool(v))
            return WHY("'%s' is a boolean in YAML 1.1 and text in YAML 1.2; write %s", v,
                       strchr("yYoO", v[0]) && strcasecmp(v, "off") ? "true" : "false");
        if (!parse_bool(v, &b))
            return WHY("expected true or false, got '%s'", v);
        *(int *)(void *)dst = b;
        return 0;
    }
    case SF_CFG_F64: {
        if (number_spelling(v, 0, why, why_cap) < 0)
            return -1;
        errno = 0;
        double d = strtod(v, &end);
        if (end == v || *end || errno || !isfinite(d))
            return WHY("'%s' is too large, or too near 0, for a double", v);
        if (d < f->lo || d > f->hi)
            return WHY("%g is out of range %g..%g", d, f->lo, f->hi);
        *(double *)(void *)dst = d;
        return 0;
    }
    case SF_CFG_U32:
    case SF_CFG_U64:
    case SF_CFG_I32: break;
    default: return WHY("is not a scalar");
    }
    /* integers: compared with the range as integers, since a double
     * rounds values above 2^53 */
    if (v[0] == '-' && f->type != SF_CFG_I32)
        return WHY("expected a non-negative integer, got '%s'", v);
    if (number_spelling(v, 1, why, why_cap) < 0)
        return -1;
    errno = 0;
    long long ll = 0;
    unsigned long long ull = 0;
    int out;
    if (f->type == SF_CFG_I32) {
        ll = strtoll(v, &end, 10);
        out = ll < (long long)f->lo || ll > (long long)f->hi;
    } else {
        ull = strtoull(v, &end, 10);
        out = ull < (unsigned long long)f->lo || ull > (unsigned long long)f->hi;
    }
    if (end == v || *end)
        return WHY("expected an integer, got '%s'", v);
    if (errno == ERANGE || out)
        return WHY("%s is out of range %.0f..%.0f", v, f->lo, f->hi);
    switch (f->type) {
    case SF_CFG_U32: *(uint32_t *)(void *)dst = (uint32_t)ull; break;
    case SF_CFG_U64: *(uint64_t *)(void *)dst = (uint64_t)ull; break;
    default: *(int *)(void *)dst = (int)ll; break;
    }
    return 0;
}

/* A list's default (the row's `def`, config.h) into `c`. Returns 0, or -1
 * with why the default is not one (sf_config_schema_check() reports it). */
static int store_list_default(const sf_config_key *f, sf_run_config *c, char *why, size_t why_cap) {
    int *n = count_of(f, c);
    *n = 0;
    if (!f->def)
        return 0;
    if (f->type == SF_CFG_ENCOUNTERS)
        return WHY("an encounter mix has no default but every encounter");
    for (const char *p = f->def; *p;) {
        const char *bar = strchr(p, '|');
        size_t l = bar ? (size_t)(bar - p) : strlen(p);
        char item[SF_CFG_NAME];
        if (l >= sizeof item)
            return WHY("default entry '%.*s' is too long", (int)l, p);
        memcpy(item, p, l);
        item[l] = '\0';
        p += l + (bar ? 1 : 0);
        if (*n >= f->cap)
            return WHY("default has more than %d entries", f->cap);
        if (f->type == SF_CFG_NAMES) {
            if (f->lookup && f->lookup(item) < 0)
                return WHY("default names '%s', which is unknown", item);
            snprintf(((char(*)[SF_CFG_NAME])(void *)((char *)c + f->off))[(*n)++], SF_CFG_NAME,
                     "%s", item);
            continue;
        }
        /* c schedule: "BELOW:C" or "C" */
        sf_cfg_csched s = {0, 0};
        char *colon = strchr(item, ':'), *end;
        const char *cs = item;
        if (colon) {
            *colon = '\0';
            unsigned long b = strtoul(item, &end, 10);
            if (end == item || *end || b == 0 || b > 100000000ul)
                return WHY("default entry '%s' has no simulation count before ':'", item);
            s.below = (uint32_t)b;
            cs = colon + 1;
        }
        s.c = strtod(cs, &end);
        if (end == cs || *end || !(s.c >= 0) || s.c > 100)
            return WHY("default entry has c '%s', not a number in 0..100", cs);
        ((sf_cfg_csched *)(void *)((char *)c + f->off))[(*n)++] = s;
    }
    return 0;
}

#undef WHY

/* ---- defaults ----------------------------------------------------------- */

void sf_config_defaults(sf_run_config *c) {
    memset(c, 0, sizeof *c);
    char why[SF_ERR_MSG_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        /* a default that does not pass its own row's checks is a table error
         * sf_config_schema_check() names; the member is left zero */
        if (is_list(keys[i].type))
            (void)store_list_default(&keys[i], c, why, sizeof why);
        else if (keys[i].def)
            (void)store_scalar(&keys[i], keys[i].def, c, why, sizeof why);
    }
}

void sf_config_keys_dir(const sf_run_config *cfg, char *out, size_t cap) {
    if (strcmp(cfg->security.mode, "curve"))
        snprintf(out, cap, "%s", "");
    else if (cfg->security.keys[0])
        snprintf(out, cap, "%s", cfg->security.keys);
    else
        snprintf(out, cap, "%s/keys", cfg->output_dir);
}

/* ---- rules between keys --------------------------------------------------- */

/* A broken rule: the key at fault (a row's path), the key to point at when
 * the file does not give that one (NULL: none), and why. */
typedef void (*rule_fn)(void *ctx, const char *key, const char *near, const char *why);

struct rule;
typedef struct rule_sink {
    rule_fn bad;
    void *ctx;
    const struct rule *rule;
    int broken; /* reported so far */
} rule_sink;

/* One rule: the row it reports on, where to point instead when the file
 * lacks that key, and the check (given that row, so one check can serve
 * several keys of a kind). A check may report several times. */
typedef struct rule {
    const char *key;
    const char *near;
    void (*check)(const sf_run_config *c, const sf_config_key *k, rule_sink *s);
} rule;

static void broken(rule_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void broken(rule_sink *s, const char *fmt, ...) {
    char why[SF_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    s->bad(s->ctx, s->rule->key, s->rule->near, why);
    s->broken++;
}

static const char *text_of(const sf_run_config *c, const sf_config_key *k) {
    return (const char *)c + k->off;
}

/* A run name becomes part of file names (shards, scratch files): letters,
 * digits, '.', '_' and '-', not starting with '.'. */
static int name_ok(const char *s) {
    if (!s[0] || s[0] == '.')
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

static void rule_name_fits_file_names(const sf_run_config *c, const sf_config_key *k,
                                      rule_sink *s) {
    if (!name_ok(text_of(c, k)))
        broken(s,
               "'%s' may hold only letters, digits, '.', '_' and '-' and must not start with '.' "
               "(it names files)",
               text_of(c, k));
}

static void rule_endpoint_usable(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *p = sf_endpoint_problem(text_of(c, k));
    if (p)
        broken(s, "'%s': %s", text_of(c, k), p);
}

static void rule_deck_parses(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_err e = {0};
    if (sf_deck_parse(text_of(c, k), &spec, &e) < 0)
        broken(s, "%s", strncmp(e.msg, "deck: ", 6) ? e.msg : e.msg + 6);
}

static void rule_hp_within_max_hp(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (c->play.hp > c->play.max_hp)
        broken(s, "%u is above play.max_hp (%u)", c->play.hp, c->play.max_hp);
}

/* Each name of a list the engine knows (the YAML reader checks them as it
 * reads; a RunConfig or a struct built in memory is checked here). */
static void names_known(const sf_run_config *c, const sf_config_key *k, rule_sink *s,
                        const char *noun) {
    const char(*names)[SF_CFG_NAME] =
        (const char(*)[SF_CFG_NAME])(const void *)((const char *)c + k->off);
    for (int i = 0; i < count_in(k, c); i++)
        if (k->lookup && k->lookup(names[i]) < 0)
            broken(s, "unknown %s '%s'", noun, names[i]);
}

static void rule_relics_known(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    names_known(c, k, s, "relic");
}

static void rule_potions_known(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    names_known(c, k, s, "potion");
}

static void rule_encounters_valid(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    for (int i = 0; i < c->play.n_encounters; i++)
        if (c->play.encounters[i].id < 0 || c->play.encounters[i].id >= sf_encounter_count() ||
            !(c->play.encounters[i].weight > 0))
            broken(s, "entry %d is invalid", i);
}

static void rule_encounters_need_fights(const sf_run_config *c, const sf_config_key *k,
                                        rule_sink *s) {
    (void)k;
    if (c->play.n_encounters > 0 && !strcmp(c->play.mode, "gauntlet"))
        broken(s, "applies to play.mode fights only; a gauntlet draws its fights from the act's "
                  "pools (remove it or set play.mode: fights)");
}

/* 1 when row k of c holds another value than the default. */
static int differs_from_default(const sf_run_config *c, const sf_config_key *k) {
    sf_run_config d;
    sf_config_defaults(&d);
    if (memcmp((const char *)c + k->off, (const char *)&d + k->off, k->size) != 0)
        return 1;
    return k->count_off && *(const int *)((const char *)c + k->count_off) !=
                               *(const int *)((const char *)&d + k->count_off);
}

/* With play.start rewards the deck, relics, potions and HP come from the
 * run prefix: a value given for them would be ignored, so it is refused. */
static void rule_start_owns_the_deck(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    if (strcmp(c->play.start, "rewards"))
        return;
    if (differs_from_default(c, k))
        broken(s, "applies to play.start starter only: a rewards start draws the deck, relics, "
                  "potions and HP from its run prefix (docs/starts.md)");
}

static void rule_rewards_need_fights(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (!strcmp(c->play.start, "rewards") && strcmp(c->play.mode, "fights"))
        broken(s, "rewards needs play.mode fights: a gauntlet is its own run from the starter "
                  "deck");
}

static void rule_picker_needs_rewards(const sf_run_config *c, const sf_config_key *k,
                                      rule_sink *s) {
    (void)k;
    if (strcmp(c->play.start, "rewards") && strcmp(c->play.picker, "greedy"))
        broken(s, "applies to play.start rewards only (a starter start picks nothing)");
}

/* A gate side's network: pinned, with a file to load (as model.* for a
 * self-play run with search.evaluator net). */
static const struct sf_cfg_gate_side *side_of(const sf_run_config *c, const sf_config_key *k) {
    return !strncmp(k->path, "candidate.", 10) ? &c->candidate : &c->champion;
}

static void rule_side_net_model(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    if (strcmp(c->kind, "gate") || strcmp(side_of(c, k)->evaluator, "net") || text_of(c, k)[0])
        return;
    broken(s, "required when this side's evaluator is net%s",
           k->type == SF_CFG_SHA256 ? " (a 64-digit hex SHA-256)" : "");
}

static void rule_side_trees(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const struct sf_cfg_gate_side *g = side_of(c, k);
    uint32_t sims = g->simulations ? g->simulations : c->search.simulations;
    uint32_t trees = g->trees ? g->trees : c->search.trees;
    if (!strcmp(c->kind, "gate") && trees > sims)
        broken(s, "%u trees for %u simulations: each tree runs at least one simulation", trees,
               sims);
}

static void rule_side_alpha(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    double a = side_of(c, k)->widening_alpha;
    if (a != -1.0 && a < 0.0)
        broken(s, "%g: -1 (search.widening_alpha) or a value in [0, 1]", a);
}

static void rule_side_leaf_mix(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const struct sf_cfg_gate_side *g = side_of(c, k);
    if (g->leaf_mix != -1.0 && g->leaf_mix < 0.0)
        broken(s, "%g: -1 (search.leaf_mix) or a value in [0, 1]", g->leaf_mix);
    else if (g->leaf_mix > 0.0 && strcmp(g->evaluator, "net"))
        broken(s, "mixes a network's leaf values: this side's evaluator is %s", g->evaluator);
}

static void rule_leaf_mix_needs_net(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (c->search.leaf_mix > 0.0 && !strcmp(c->kind, "selfplay") &&
        strcmp(c->search.evaluator, "net"))
        broken(s, "mixes a network's leaf values: it needs search.evaluator net");
}

static void rule_gate_deltas(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (!(c->gate.delta0 < c->gate.delta1))
        broken(s, "%g is not above gate.delta0 %g: the test needs delta0 < delta1", c->gate.delta1,
               c->gate.delta0);
}

static void rule_gate_pairs(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (c->gate.min_pairs > c->gate.max_pairs)
        broken(s, "%u is above gate.max_pairs %u", c->gate.min_pairs, c->gate.max_pairs);
}

static void rule_gate_seeds(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (!strcmp(c->kind, "gate") && c->gate.max_pairs > c->seed_count)
        broken(s, "%u pairs need as many seeds; seeds.count is %llu (one pair per seed)",
               c->gate.max_pairs, (unsigned long long)c->seed_count);
    if (!strcmp(c->kind, "loop") && c->gate.max_pairs > c->loop.gate_seeds)
        broken(s, "%u pairs need as many seeds; loop.gate_seeds is %llu (one pair per seed)",
               c->gate.max_pairs, (unsigned long long)c->loop.gate_seeds);
}

static void rule_gate_job_size(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (strcmp(c->kind, "selfplay") && c->job_size > SF_CFG_GATE_JOB_SIZE_MAX)
        broken(s, "%u is above %u, the most pairs one gate job's manifest carries", c->job_size,
               SF_CFG_GATE_JOB_SIZE_MAX);
}

static void rule_trees_within_simulations(const sf_run_config *c, const sf_config_key *k,
                                          rule_sink *s) {
    (void)k;
    if (c->search.trees > c->search.simulations)
        broken(s, "%u is above search.simulations (%u): each tree runs at least one simulation",
               c->search.trees, c->search.simulations);
}

static void rule_net_simulations_fit_trees(const sf_run_config *c, const sf_config_key *k,
                                           rule_sink *s) {
    (void)k;
    if (c->loop.net_simulations && c->search.trees > c->loop.net_simulations)
        broken(s, "%u is below search.trees (%u): each tree runs at least one simulation",
               c->loop.net_simulations, c->search.trees);
}

static void rule_c_schedule_increases(const sf_run_config *c, const sf_config_key *k,
                                      rule_sink *s) {
    (void)k;
    for (int i = 1; i < c->search.n_c_schedule; i++) {
        uint32_t prev = c->search.c_schedule[i - 1].below, cur = c->search.c_schedule[i].below;
        if (prev == 0 || (cur != 0 && cur <= prev)) {
            broken(s, "'below' must increase, with only the last entry unbounded");
            return;
        }
    }
}

/* A network evaluator's model is either pinned (model.bundle and
 * model.sha256) or followed (model.champion alone: the registry holds the
 * files, the ledger pins each job's model). */
static void rule_bundle_for_net(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    if (c->model.champion[0] && text_of(c, k)[0])
        broken(s, "excludes model.champion: a followed model's file is "
                  "<registry>/<sha256>.safetensors, beside the champion file");
    else if (!strcmp(c->search.evaluator, "net") && !text_of(c, k)[0] && !c->model.champion[0])
        broken(s, "required when search.evaluator is net (or follow a registry with "
                  "model.champion)");
}

static void rule_sha256_for_net(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    if (c->model.champion[0] && text_of(c, k)[0])
        broken(s, "excludes model.champion: a followed run's jobs take the champion of the "
                  "moment they are first leased");
    else if (!strcmp(c->search.evaluator, "net") && !text_of(c, k)[0] && !c->model.champion[0])
        broken(s, "a 64-digit hex SHA-256 is required when search.evaluator is net");
}

static void rule_champion_for_net(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    if (text_of(c, k)[0] && strcmp(c->search.evaluator, "net"))
        broken(s, "applies to search.evaluator net only (a rollout run has no model)");
}

/* model.url is a template common/fetch.h can fill in. */
static void rule_model_url(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *v = text_of(c, k);
    sf_err e = {0};
    if (v[0] && sf_fetch_template_check(v, &e) != SF_OK)
        broken(s, "%s", e.msg);
}

/* A config file's model.sha256 was normalised when read (SF_CFG_SHA256); a
 * config built in memory or from a RunConfig message must already hold the
 * canonical spelling, or its digest would name the model differently. */
static void rule_sha256_canonical(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *v = text_of(c, k);
    if (!v[0] || sf_sha256_hex_canonical(v))
        return;
    sf_err e = {0};
    char lower[SF_SHA256_HEX_LEN + 1];
    if (sf_sha256_hex_parse(v, lower, &e) != SF_OK)
        broken(s, "%s", e.msg);
    else
        broken(s, "'%s' is not in lower case; a SHA-256 is stored and sent as '%s'", v, lower);
}

static void rule_warmup_within_steps(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (c->train.warmup > c->train.steps)
        broken(s, "%u is above train.steps (%u): the learning rate would never reach train.lr",
               c->train.warmup, c->train.steps);
}

static void rule_some_loss_weight(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (!(c->train.weight_value > 0 || c->train.weight_policy > 0 || c->train.weight_forecast > 0 ||
          c->train.weight_win > 0))
        broken(s, "every loss weight is 0 (weight_value, weight_policy, weight_forecast, "
                  "weight_win): nothing would be trained");
}

static void rule_seeds_fit(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    (void)k;
    if (c->seed_start + c->seed_count < c->seed_start)
        broken(s, "seeds.start + seeds.count overflows");
}

/* ---- slurm.*: what sbatch will be given ---- */

/* A Slurm time limit (sbatch --time) in seconds: "MIN", "MIN:SEC",
 * "H:MIN:SEC", "D-H", "D-H:MIN" or "D-H:MIN:SEC"; -1 for "infinite" or
 * "unlimited"; -2 when the text is none of these (or zero). */
static long slurm_time_seconds(const char *s) {
    if (!strcasecmp(s, "infinite") || !strcasecmp(s, "unlimited"))
        return -1;
    long days = 0, f[3] = {0, 0, 0};
    int nf = 0, has_days = 0;
    const char *p = s;
    for (;;) {
        if (*p < '0' || *p > '9')
            return -2;
        long v = 0;
        for (; *p >= '0' && *p <= '9'; p++)
            if ((v = v * 10 + (*p - '0')) > 100000000)
                return -2;
        if (*p == '-' && !has_days && nf == 0) {
            days = v, has_days = 1, p++;
            continue;
        }
        f[nf++] = v;
        if (*p == '\0')
            break;
        if (*p != ':' || nf == 3)
            return -2;
        p++;
    }
    long secs;
    if (has_days) /* D-H, D-H:M, D-H:M:S */
        secs = days * 86400 + f[0] * 3600 + f[1] * 60 + f[2];
    else if (nf == 1) /* M */
        secs = f[0] * 60;
    else if (nf == 2) /* M:S */
        secs = f[0] * 60 + f[1];
    else /* H:M:S */
        secs = f[0] * 3600 + f[1] * 60 + f[2];
    return secs > 0 ? secs : -2;
}

static void rule_slurm_time(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *v = text_of(c, k);
    if (v[0] && slurm_time_seconds(v) == -2)
        broken(s,
               "'%s' is no Slurm time limit (MINUTES, MIN:SEC, H:MIN:SEC, DAYS-H, DAYS-H:MIN, "
               "DAYS-H:MIN:SEC or unlimited)",
               v);
}

/* Partition, account and QOS names go into #SBATCH lines as they are. */
static void rule_slurm_name(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    for (const char *p = text_of(c, k); *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '-' || *p == '.' || *p == ',')) {
            broken(s, "'%s' may hold only letters, digits, '_', '-', '.' and ',' (a Slurm name)",
                   text_of(c, k));
            return;
        }
}

static void rule_slurm_mem(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *v = text_of(c, k), *p = v;
    while (*p >= '0' && *p <= '9')
        p++;
    if (v[0] && (p == v || (*p && (strchr("KMGT", *p) == NULL || p[1]))))
        broken(s, "'%s' is no Slurm memory size (a number of megabytes, or one with K, M, G or T)",
               v);
}

int sf_config_script_path_ok(const char *path) {
    if (path[0] != '/')
        return 0;
    for (const char *p = path; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("/._+-@", *p)))
            return 0;
    return 1;
}

/* Paths the scripts name (sf_config_script_path_ok). */
static void rule_slurm_path(const sf_run_config *c, const sf_config_key *k, rule_sink *s) {
    const char *v = text_of(c, k);
    if (v[0] && !sf_config_script_path_ok(v))
        broken(s, "'%s': %s", v, SF_CFG_SCRIPT_PATH_RULE);
}

static void rule_slurm_signal_before_limit(const sf_run_config *c, const sf_config_key *k,
                                           rule_sink *s) {
    (void)k;
    long limit = c->slurm.worker_time[0] ? slurm_time_seconds(c->slurm.worker_time) : -1;
    if (limit > 0 && c->slurm.signal_seconds >= (uint32_t)limit)
        broken(s,
               "%u s is not below slurm.worker_time (%s = %ld s): the drain would start with "
               "the job",
               c->slurm.signal_seconds, c->slurm.worker_time, limit);
}

/* A fleet reachable from other machines needs keys made for it: the
 * generated keys of a local run stay in its output dir. Reported on the
 * endpoint (row k), which is in the file whenever it is not loopback. */
static void rule_keys_beyond_loopback(const sf_run_config *c, const sf_config_key *k,
                                      rule_sink *s) {
    const char *ep = text_of(c, k);
    if (strcmp(c->security.mode, "curve") || c->security.keys[0])
        return;
    if (!sf_endpoint_problem(ep) && !sf_endpoint_is_loopback(ep))
        broken(s,
               "%s binds beyond this machine without security.keys: give a key directory made "
               "with `sf-fleet keygen DIR` (or security.mode none, which lets anyone in)",
               ep);
}

/* Checked in this order; each broken one is reported. */
static const rule rules[] = {
    {"run.name", NULL, rule_name_fits_file_names},
    {"coordinator.endpoint", NULL, rule_endpoint_usable},
    {"evald.endpoint", NULL, rule_endpoint_usable},
    {"play.deck", NULL, rule_deck_parses},
    /* a max_hp given alone, below the default hp: point at the max_hp */
    {"play.hp", "play.max_hp", rule_hp_within_max_hp},
    {"play.relics", NULL, rule_relics_known},
    {"play.potions", NULL, rule_potions_known},
    {"play.encounters", NULL, rule_encounters_valid},
    {"play.encounters", NULL, rule_encounters_need_fights},
    {"play.deck", NULL, rule_start_owns_the_deck},
    {"play.relics", NULL, rule_start_owns_the_deck},
    {"play.potions", NULL, rule_start_owns_the_deck},
    {"play.hp", NULL, rule_start_owns_the_deck},
    {"play.max_hp", NULL, rule_start_owns_the_deck},
    {"play.picker", NULL, rule_picker_needs_rewards},
    {"play.start", NULL, rule_rewards_need_fights},
    {"champion.bundle", NULL, rule_side_net_model},
    {"champion.sha256", NULL, rule_side_net_model},
    {"candidate.bundle", NULL, rule_side_net_model},
    {"candidate.sha256", NULL, rule_side_net_model},
    {"champion.trees", NULL, rule_side_trees},
    {"candidate.trees", NULL, rule_side_trees},
    {"champion.widening_alpha", NULL, rule_side_alpha},
    {"candidate.widening_alpha", NULL, rule_side_alpha},
    {"champion.leaf_mix", NULL, rule_side_leaf_mix},
    {"candidate.leaf_mix", NULL, rule_side_leaf_mix},
    {"search.leaf_mix", NULL, rule_leaf_mix_needs_net},
    {"champion.sha256", NULL, rule_sha256_canonical},
    {"candidate.sha256", NULL, rule_sha256_canonical},
    {"gate.delta1", NULL, rule_gate_deltas},
    {"gate.min_pairs", NULL, rule_gate_pairs},
    {"gate.max_pairs", NULL, rule_gate_seeds},
    {"seeds.job_size", NULL, rule_gate_job_size},
    {"search.trees", NULL, rule_trees_within_simulations},
    {"loop.net_simulations", NULL, rule_net_simulations_fit_trees},
    {"search.c_schedule", NULL, rule_c_schedule_increases},
    {"model.bundle", NULL, rule_bundle_for_net},
    {"model.sha256", NULL, rule_sha256_for_net},
    {"model.sha256", NULL, rule_sha256_canonical},
    {"model.champion", NULL, rule_champion_for_net},
    {"model.url", NULL, rule_model_url},
    {"seeds.count", NULL, rule_seeds_fit},
    {"train.warmup", "train.steps", rule_warmup_within_steps},
    {"train.weight_value", NULL, rule_some_loss_weight},
    {"slurm.partition", NULL, rule_slurm_name},
    {"slurm.gpu_partition", NULL, rule_slurm_name},
    {"slurm.account", NULL, rule_slurm_name},
    {"slurm.qos", NULL, rule_slurm_name},
    {"slurm.coordinator_time", NULL, rule_slurm_time},
    {"slurm.worker_time", NULL, rule_slurm_time},
    {"slurm.evald_time", NULL, rule_slurm_time},
    {"slurm.mem_per_worker", NULL, rule_slurm_mem},
    {"slurm.workdir", NULL, rule_slurm_path},
    {"slurm.bin_dir", NULL, rule_slurm_path},
    /* a lead given alone, above the limit: point at the time */
    {"slurm.signal_seconds", "slurm.worker_time", rule_slurm_signal_before_limit},
    {"coordinator.endpoint", NULL, rule_keys_beyond_loopback},
    {"evald.endpoint", NULL, rule_keys_beyond_loopback},
};

/* Every rule, in order; each broken one goes to `bad`. Returns how many. */
static int check_config(const sf_run_config *c, rule_fn bad, void *bad_ctx) {
    int n = 0;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const sf_config_key *k = key_of(rules[i].key);
        if (!k) /* a table error: sf_config_schema_check() names it */
            continue;
        rule_sink s = {bad, bad_ctx, &rules[i], 0};
        rules[i].check(c, k, &s);
        n += s.broken;
    }
    /* Keys of another run kind: the flags of their rows say which. */
    unsigned kind = !strcmp(c->kind, "gate")   ? SF_CFG_GATE
                    : !strcmp(c->kind, "loop") ? SF_CFG_LOOP
                                               : SF_CFG_SELFPLAY;
    for (size_t i = 0; i < NKEYS; i++) {
        unsigned kinds = keys[i].flags & SF_CFG_KINDS;
        if (!kinds || (kinds & kind) || !differs_from_default(c, &keys[i]))
            continue;
        rule r = {keys[i].path, NULL, NULL};
        rule_sink s = {bad, bad_ctx, &r, 0};
        char names[40] = "";
        static const struct {
            unsigned bit;
            const char *name;
        } kind_names[] = {
            {SF_CFG_SELFPLAY, "selfplay"}, {SF_CFG_GATE, "gate"}, {SF_CFG_LOOP, "loop"}};
        for (size_t j = 0; j < sizeof kind_names / sizeof kind_names[0]; j++)
            if (kinds & kind_names[j].bit)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? " and " : "", kind_names[j].name);
        broken(&s, "applies to run.kind %s only (this run is %s)", names, c->kind);
        n += s.broken;
    }
    return n;
}

typedef struct first_rule {
    const char *origin;
    sf_err *err;
    int seen;
} first_rule;

static void keep_first(void *p, const char *key, const char *near, const char *why) {
    (void)near;
    first_rule *f = p;
    if (f->seen++ == 0)
        sf_err_set(f->err, SF_ECONFIG, "%s: %s: %s", f->origin, key, why);
}

int sf_config_validate(const sf_run_config *c, const char *origin, sf_err *err) {
    first_rule f = {origin, err, 0};
    return check_config(c, keep_first, &f) > 0 ? SF_ECONFIG : SF_OK;
}

/* ---- parse context ------------------------------------------------------ */

typedef struct ctx {
    yaml_document_t *doc;
    const char *origin;
    sf_run_config *cfg;
    sf_err *err;
    const yaml_node_t *at[NKEYS]; /* where each key was given (NULL: not in the file) */
    int problems;                 /* reported so far; the first one is in err */
    sf_config_report_fn report;   /* every problem, in file order (may be NULL) */
    void *report_ctx;
} ctx;

/* The node a key's value came from, or NULL when the file did not give it. */
static const yaml_node_t *node_of(const ctx *x, const char *key) {
    const sf_config_key *f = key ? key_of(key) : NULL;
    return f ? x->at[f - keys] : NULL;
}

/* Report one problem (a whole line: "origin[:line:col]: ..."): the first
 * becomes the error, every one goes to the report callback. */
static int problem(ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(ctx *x, const char *fmt, ...) {
    char line[SF_ERR_MSG_MAX + 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (x->problems++ == 0)
        sf_err_set(x->err, SF_ECONFIG, "%s", line);
    if (x->report)
        x->report(x->report_ctx, line);
    return SF_ECONFIG;
}

/* A problem with `key`, at node `n` (NULL: a key the file lacks). */
static int fail(ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(ctx *x, const yaml_node_t *n, const char *key, const char *fmt, ...) {
    char msg[SF_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n)
        return problem(x, "%s:%zu:%zu: %s: %s", x->origin, n->start_mark.line + 1,
                       n->start_mark.column + 1, key, msg);
    return problem(x, "%s: %s: %s", x->origin, key, msg);
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The style a scalar was written in, as a word for a message: NULL for a
 * plain scalar, which alone may be a number or a boolean (values, above). */
static const char *quoting(const yaml_node_t *n) {
    switch (n->data.scalar.style) {
    case YAML_PLAIN_SCALAR_STYLE:
    case YAML_ANY_SCALAR_STYLE: return NULL;
    case YAML_SINGLE_QUOTED_SCALAR_STYLE:
    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: return "quoted";
    default: return "as a block scalar";
    }
}

static int set_field(ctx *x, const sf_config_key *f, const yaml_node_t *n) {
    const char *v = scalar(n);
    if (!v)
        return fail(x, n, f->path, "expected a scalar value, got a %s",
                    n->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    const char *q = quoting(n);
    if (q && f->type == SF_CFG_BOOL)
        return fail(x, n, f->path,
                    "expected true or false, got '%s' %s, which YAML reads as text; write true "
                    "or false without quotes",
                    v, q);
    if (q && (f->type == SF_CFG_U32 || f->type == SF_CFG_U64 || f->type == SF_CFG_I32 ||
              f->type == SF_CFG_F64))
        return fail(x, n, f->path,
                    "expected %s, got '%s' %s, which YAML reads as text; write the number "
                    "without quotes",
                    f->type == SF_CFG_F64 ? "a number" : "an integer", v, q);
    if ((f->type == SF_CFG_STR || f->type == SF_CFG_SHA256) &&
        n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL")))
        return fail(x, n, f->path, "is null; give a value (quote it to mean the text)");
    char why[SF_ERR_MSG_MAX];
    if (store_scalar(f, v, x->cfg, why, sizeof why) < 0)
        return fail(x, n, f->path, "%s", why);
    return SF_OK;
}

/* An encounter mix (SF_CFG_ENCOUNTERS): a mapping of encounter or pool name
 * -> weight. A pool (weak, strong, elite, boss, all) spreads its weight
 * evenly over its encounters, so {weak: 1, boss: 1} gives both classes the
 * same share. */
static int add_encounter(ctx *x, const sf_config_key *f, const yaml_node_t *at, int id, double w) {
    sf_cfg_encounter *e = (sf_cfg_encounter *)(void *)((char *)x->cfg + f->off);
    int *n = count_of(f, x->cfg);
    for (int i = 0; i < *n; i++) {
        if (e[i].id == id) {
            e[i].weight += w;
            return SF_OK;
        }
    }
    if (*n >= f->cap)
        return fail(x, at, f->path, "too many encounters");
    e[(*n)++] = (sf_cfg_encounter){id, w};
    return SF_OK;
}

static int read_encounters(ctx *x, const sf_config_key *f, const yaml_node_t *n) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(x, n, f->path, "expected a mapping of encounter name to weight");
    *count_of(f, x->cfg) = 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *name = scalar(k), *ws = scalar(v);
        if (!name)
            return fail(x, k, f->path, "keys must be encounter or pool names");
        char why[SF_ERR_MSG_MAX];
        if (ws && quoting(v))
            return fail(x, v, f->path,
                        "weight of '%s' must be a positive number, got '%s' %s, which YAML "
                        "reads as text",
                        name, ws, quoting(v));
        if (ws && number_spelling(ws, 0, why, sizeof why) < 0)
            return fail(x, v, f->path, "weight of '%s': %s", name, why);
        double w = ws ? strtod(ws, NULL) : -1;
        if (!ws || !(w > 0) || !isfinite(w))
            return fail(x, v, f->path, "weight of '%s' must be a positive number", name);
        int pool = !strcmp(name, "weak")     ? SF_POOL_WEAK
                   : !strcmp(name, "strong") ? SF_POOL_STRONG
                   : !strcmp(name, "elite")  ? SF_POOL_ELITE
                   : !strcmp(name, "boss")   ? SF_POOL_BOSS
                   : !strcmp(name, "all")    ? 99
                                             : -1;
        if (pool >= 0) {
            int members = 0;
            for (int e = 0; e < sf_encounter_count(); e++)
                members += pool == 99 || sf_encounter_pool(e) == pool;
            for (int e = 0; e < sf_encounter_count(); e++)
                if (pool == 99 || sf_encounter_pool(e) == pool)
                    if (add_encounter(x, f, k, e, w / members) < 0)
                        return SF_ECONFIG;
            continue;
        }
        int id = sf_encounter_lookup(name);
        if (id < 0)
            return fail(x, k, f->path,
                        "unknown encounter '%s' (an Act-1 encounter name, or weak, strong, "
                        "elite, boss, all)",
                        name);
        if (add_encounter(x, f, k, id, w) < 0)
            return SF_ECONFIG;
    }
    if (*count_of(f, x->cfg) == 0)
        return fail(x, n, f->path, "must name at least one encounter");
    return SF_OK;
}

/* A list of names (SF_CFG_NAMES) the row's lookup knows. */
static int read_names(ctx *x, const sf_config_key *f, const yaml_node_t *n) {
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(x, n, f->path, "expected a list of names");
    char(*out)[SF_CFG_NAME] = (void *)((char *)x->cfg + f->off);
    int *count = count_of(f, x->cfg);
    *count = 0;
    int rc = SF_OK;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(x->doc, *it);
        const char *v = scalar(e);
        if (*count >= f->cap)
            return fail(x, e, f->path, "at most %d entries", f->cap);
        /* every bad entry is reported, not just the first */
        if (!v)
            rc = fail(x, e, f->path, "list items must be names");
        else if (f->lookup && f->lookup(v) < 0)
            rc = fail(x, e, f->path, "unknown name '%s'", v);
        else if (strlen(v) >= SF_CFG_NAME)
            rc = fail(x, e, f->path, "name too long");
        else
            snprintf(out[(*count)++], SF_CFG_NAME, "%s", v);
    }
    return rc;
}

/* A c schedule (SF_CFG_CSCHED): a list of {below: N, c: X}. */
static int read_csched(ctx *x, const sf_config_key *f, const yaml_node_t *n) {
    const char *key = f->path;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(x, n, key, "expected a list of {below: N, c: X} entries");
    sf_cfg_csched *out = (sf_cfg_csched *)(void *)((char *)x->cfg + f->off);
    int *count = count_of(f, x->cfg);
    *count = 0;
    char below_key[96], c_key[96];
    snprintf(below_key, sizeof below_key, "%s.below", key);
    snprintf(c_key, sizeof c_key, "%s.c", key);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(x->doc, *it);
        if (e->type != YAML_MAPPING_NODE)
            return fail(x, e, key, "each entry must be a mapping {below: N, c: X}");
        if (*count >= f->cap)
            return fail(x, e, key, "at most %d entries", f->cap);
        sf_cfg_csched s = {0, -1};
        for (yaml_node_pair_t *p = e->data.mapping.pairs.start; p < e->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
            yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
            const char *ks = scalar(k), *vs = scalar(v);
            int below = ks && !strcmp(ks, "below"), is_c = ks && !strcmp(ks, "c");
            char why[SF_ERR_MSG_MAX];
            if ((below || is_c) && vs && quoting(v))
                return fail(x, v, below ? below_key : c_key,
                            "expected %s, got '%s' %s, which YAML reads as text; write the "
                            "number without quotes",
                            below ? "an integer" : "a number", vs, quoting(v));
            if ((below || is_c) && vs && !(below && vs[0] == '-') &&
                number_spelling(vs, below, why, sizeof why) < 0)
                return fail(x, v, below ? below_key : c_key, "%s", why);
            if (below && vs) {
                errno = 0;
                unsigned long long b = strtoull(vs, NULL, 10);
                if (errno || b > 100000000ull || vs[0] == '-')
                    return fail(x, v, below_key, "expected a simulation count, got '%s'", vs);
                s.below = (uint32_t)b;
            } else if (is_c && vs) {
                double d = strtod(vs, NULL);
                if (!(d >= 0) || d > 100)
                    return fail(x, v, c_key, "expected a number in 0..100, got '%s'", vs);
                s.c = d;
            } else {
                return fail(x, k, key, "unknown key '%s' (expected below, c)", ks ? ks : "?");
            }
        }
        if (s.c < 0)
            return fail(x, e, key, "entry is missing 'c'");
        out[(*count)++] = s;
    }
    if (*count == 0)
        return fail(x, n, key, "must have at least one entry");
    return SF_OK;
}

static int read_list(ctx *x, const sf_config_key *f, const yaml_node_t *n) {
    switch (f->type) {
    case SF_CFG_ENCOUNTERS: return read_encounters(x, f, n);
    case SF_CFG_NAMES: return read_names(x, f, n);
    default: return read_csched(x, f, n);
    }
}

/* Append ", word" (or "word" first) to a bounded list. */
static void add_word(char *buf, size_t cap, size_t *len, const char *word, size_t wlen) {
    if (*len >= cap)
        return;
    int w = snprintf(buf + *len, cap - *len, "%s%.*s", *len ? ", " : "", (int)wlen, word);
    *len += w > 0 ? (size_t)w : 0;
}

/* "unknown key (SECTION takes: ...)": its scalar keys, then its lists. */
static void unknown_key(ctx *x, const yaml_node_t *k, const char *path, const char *section) {
    char names[512] = "";
    size_t len = 0;
    for (int lists = 0; lists < 2; lists++)
        for (size_t i = 0; i < NKEYS; i++)
            if (in_section(&keys[i], section) && is_list(keys[i].type) == lists) {
                const char *key = keys[i].path + section_len(&keys[i]) + 1;
                add_word(names, sizeof names, &len, key, strlen(key));
            }
    fail(x, k, path, "unknown key (%s takes: %s)", section, names);
}

static int read_section(ctx *x, const char *section, const yaml_node_t *n) {
    if (n->type != YAML_MAPPING_NODE)
        return fail(x, n, section, "expected a mapping");
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(x->doc, p->value);
        const char *ks = scalar(k);
        if (!ks) {
            fail(x, k, section, "keys must be plain names");
            continue;
        }
        char path[96];
        snprintf(path, sizeof path, "%s.%s", section, ks);
        const sf_config_key *f = key_of(path);
        if (!f) {
            unknown_key(x, k, path, section);
        } else if (x->at[f - keys]) {
            fail(x, k, path, "given twice");
        } else {
            x->at[f - keys] = v;
            /* a problem is reported; go on */
            if (is_list(f->type))
                read_list(x, f, v);
            else
                set_field(x, f, v);
        }
    }
    return SF_OK;
}

/* ---- depth and tags, before the tree ------------------------------------ */

/* Two things are checked on the parser's events, before the document is
 * loaded as a tree:
 *  - nesting deeper than CONFIG_DEPTH_MAX. libyaml's scanner visits every
 *    open flow level's possible simple key at each token, so loading a
 *    document nested N levels deep takes time in N^2 (50,000 levels took
 *    10 s, 80,000 took 50 s). Reading events stops at the first node too
 *    deep, before the scanner has gone much further (it looks at most 1024
 *    characters ahead for a simple key), so a deep file costs no more than
 *    a shallow one. check_node() checks the tree's depth again, which an
 *    alias can deepen.
 *  - an explicit tag (!!int 4, !!str 4). The tree gives an untagged scalar
 *    the tag !!str, so only the events tell `!!str 4` (text) from `4`. */
#define CONFIG_DEPTH_MAX 8

typedef struct {
    int mapping;     /* a mapping (else a sequence) */
    int key_next;    /* in a mapping: the next node is a key */
    size_t path_len; /* the path's length for the nodes at this level */
} scan_level;

/* Append ".name" (or "name" first) to path, within cap. */
static void path_add(char *path, size_t cap, const char *name) {
    size_t l = strlen(path);
    snprintf(path + l, cap - l, "%s%s", l ? "." : "", name);
}

/* Returns SF_OK, or SF_ECONFIG with each explicit tag up to the first node
 * deeper than CONFIG_DEPTH_MAX reported at its line and column, named by
 * its path ("play.encounters.weak.a", as check_node() names it). A syntax
 * error ends the scan: loading the tree reports it, at the same place. */
static int scan_events(ctx *x, const char *text, size_t len) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return sf_err_set(x->err, SF_ENOMEM, "%s: cannot initialise the YAML parser", x->origin);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    scan_level lv[CONFIG_DEPTH_MAX + 1];
    int depth = 0; /* collections open */
    char path[128] = "";
    int rc = SF_OK, deep = 0;
    yaml_event_t ev;
    while (!deep && yaml_parser_parse(&parser, &ev)) {
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            break;
        }
        if ((t == YAML_SEQUENCE_END_EVENT || t == YAML_MAPPING_END_EVENT) && depth > 0) {
            path[lv[--depth].path_len] = '\0';
        } else if (t == YAML_SCALAR_EVENT || t == YAML_ALIAS_EVENT ||
                   t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
            scan_level *up = depth > 0 ? &lv[depth - 1] : NULL;
            if (up && up->mapping && up->key_next) {
                path[up->path_len] = '\0';
                path_add(path, sizeof path,
                         t == YAML_SCALAR_EVENT ? (const char *)ev.data.scalar.value : "(key)");
            }
            if (up && up->mapping)
                up->key_next = !up->key_next;
            yaml_node_t at = {.start_mark = ev.start_mark}; /* where fail() looks */
            const char *where = path[0] ? path : "(top level)";
            const yaml_char_t *tag = t == YAML_SCALAR_EVENT           ? ev.data.scalar.tag
                                     : t == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.tag
                                     : t == YAML_MAPPING_START_EVENT  ? ev.data.mapping_start.tag
                                                                      : NULL;
            if (tag)
                rc = fail(x, &at, where,
                          "YAML tag '%s' is not allowed (write the plain value; quote it to "
                          "mean text)",
                          (const char *)tag);
            if (depth > CONFIG_DEPTH_MAX) {
                rc = fail(x, &at, where, "nested deeper than %d levels (no key of the schema is)",
                          CONFIG_DEPTH_MAX);
                deep = 1;
            } else if (t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT) {
                lv[depth++] = (scan_level){t == YAML_MAPPING_START_EVENT, 1, strlen(path)};
            }
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* Words to add to a YAML syntax error at `m` when its cause is common and
 * libyaml's message does not say it: a tab in the indentation. (A tab
 * between "key:" and its value is separation, as YAML 1.2 allows, and
 * reads as a space.) */
static const char *syntax_hint(const char *text, size_t len, yaml_mark_t m) {
    size_t i = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0; /* a BOM is no column */
    for (size_t line = 0; line < m.line && i < len; i++)
        if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= len || text[i + 1] != '\n')))
            line++;
    for (size_t col = 0; i < len && col < m.column; col++) /* a character: its bytes */
        for (i++; i < len && ((unsigned char)text[i] & 0xc0) == 0x80; i++)
            ;
    return i < len && text[i] == '\t' ? " (a tab: YAML indents with spaces only)" : "";
}

/* ---- keys given twice --------------------------------------------------- */

typedef struct {
    const char *key;
    size_t at; /* the pair's index in its mapping */
} key_at;

static int by_key_then_place(const void *a, const void *b) {
    const key_at *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* For each pair of mapping `n`, the index of the pair that first gave its
 * key (its own index when it is the first, or when the key is not a
 * scalar). One sort, so a mapping of 100,000 keys costs n log n, not the
 * n^2 of comparing each key with those before it (which took minutes).
 * Returns a new array (the caller frees it), or NULL when out of memory. */
static size_t *first_givers(yaml_document_t *doc, const yaml_node_t *n) {
    size_t len = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    size_t *first = malloc((len ? len : 1) * sizeof *first);
    key_at *k = malloc((len ? len : 1) * sizeof *k);
    if (!first || !k) {
        free(first);
        free(k);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < len; i++) {
        first[i] = i;
        const char *ks = scalar(yaml_document_get_node(doc, n->data.mapping.pairs.start[i].key));
        if (ks)
            k[m++] = (key_at){ks, i};
    }
    qsort(k, m, sizeof *k, by_key_then_place);
    for (size_t j = 1; j < m; j++)
        if (!strcmp(k[j].key, k[j - 1].key))
            first[k[j].at] = first[k[j - 1].at];
    free(k);
    return first;
}

/* What the schema never reads but YAML would let through silently, checked
 * on the whole document before any key is read (each reported with its
 * line and column): a key given twice in any mapping (a section, a key, an
 * encounter weight), a control character, NUL byte or byte order mark in a
 * scalar, and nesting deeper than the schema's (through an alias; the
 * events were checked, and tags, in scan_events()). `path` names where the node sits
 * ("play.encounters"). */
static void check_node(ctx *x, const yaml_node_t *n, const char *path, int depth) {
    if (!n)
        return;
    if (depth > CONFIG_DEPTH_MAX) {
        fail(x, n, path, "nested deeper than %d levels (no key of the schema is)",
             CONFIG_DEPTH_MAX);
        return;
    }
    if (n->type == YAML_SCALAR_NODE) {
        const unsigned char *v = n->data.scalar.value;
        for (size_t i = 0; i < n->data.scalar.length; i++)
            if (v[i] < 0x20 || v[i] == 0x7f) {
                fail(x, n, path, "a control character (byte 0x%02x at offset %zu) in a value", v[i],
                     i);
                break;
            } else if (i + 2 < n->data.scalar.length && !memcmp(v + i, "\xef\xbb\xbf", 3)) {
                /* YAML allows a byte order mark before a document, not in it */
                fail(x, n, path, "a byte order mark (U+FEFF at offset %zu) in a value", i);
                break;
            }
        return;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++)
            check_node(x, yaml_document_get_node(x->doc, *it), path, depth + 1);
        return;
    }
    if (n->type != YAML_MAPPING_NODE)
        return;
    /* a section's own keys (depth 1): read_section says "given twice" */
    size_t *first = depth >= 2 ? first_givers(x->doc, n) : NULL;
    if (depth >= 2 && !first) {
        problem(x, "%s: out of memory", x->origin);
        return;
    }
    yaml_node_pair_t *pairs = n->data.mapping.pairs.start;
    for (yaml_node_pair_t *p = pairs; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->doc, p->key);
        const char *ks = scalar(k);
        char sub[128];
        snprintf(sub, sizeof sub, "%s%s%s", path[0] == '(' ? "" : path, path[0] == '(' ? "" : ".",
                 ks ? ks : "(key)");
        size_t i = (size_t)(p - pairs);
        if (first && first[i] != i)
            fail(x, k, sub, "given twice (first at line %zu); YAML would keep one silently",
                 yaml_document_get_node(x->doc, pairs[first[i]].key)->start_mark.line + 1);
        check_node(x, k, sub, depth + 1);
        check_node(x, yaml_document_get_node(x->doc, p->value), sub, depth + 1);
    }
    free(first);
}

/* Whether `name` is a section: the first part of some row's path. */
static int section_known(const char *name) {
    for (size_t i = 0; i < NKEYS; i++)
        if (in_section(&keys[i], name))
            return 1;
    return 0;
}

/* "run, seeds, ...": every section, in the table's order. */
static void section_names(char *buf, size_t cap) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS; i++)
        if (starts_section(i))
            add_word(buf, cap, &len, keys[i].path, section_len(&keys[i]));
}

/* A broken rule, at the key's position in the file (or near's). */
static void rule_in_file(void *p, const char *key, const char *near, const char *why) {
    ctx *x = p;
    const yaml_node_t *n = node_of(x, key);
    if (!n)
        n = node_of(x, near);
    fail(x, n, key, "%s", why);
}

int sf_config_parse_all(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                        sf_config_report_fn report, void *report_ctx, sf_err *err) {
    sf_config_defaults(cfg);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return sf_err_set(err, SF_ENOMEM, "%s: cannot initialise the YAML parser", origin);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    ctx x = {.doc = &doc,
             .origin = origin,
             .cfg = cfg,
             .err = err,
             .report = report,
             .report_ctx = report_ctx};
    int scanned = scan_events(&x, text, len);
    if (scanned != SF_OK) {
        yaml_parser_delete(&parser);
        return scanned;
    }
    if (!yaml_parser_load(&parser, &doc)) {
        int rc =
            problem(&x, "%s:%zu:%zu: YAML syntax error: %s%s", origin, parser.problem_mark.line + 1,
                    parser.problem_mark.column + 1, parser.problem ? parser.problem : "unknown",
                    syntax_hint(text, len, parser.problem_mark));
        yaml_parser_delete(&parser);
        return rc;
    }
    int rc = SF_OK;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        rc = problem(&x, "%s: the file is empty", origin);
    } else if (root->type != YAML_MAPPING_NODE) {
        rc = fail(&x, root, "(top level)", "expected a mapping of sections");
    } else {
        yaml_node_pair_t *pairs = root->data.mapping.pairs.start;
        size_t *givers = first_givers(&doc, root);
        if (!givers)
            problem(&x, "%s: out of memory", origin);
        for (yaml_node_pair_t *p = pairs; givers && p < root->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(&doc, p->key);
            yaml_node_t *v = yaml_document_get_node(&doc, p->value);
            const char *ks = scalar(k);
            size_t i = (size_t)(p - pairs);
            const yaml_node_t *first =
                givers[i] != i ? yaml_document_get_node(&doc, pairs[givers[i]].key) : NULL;
            if (first) {
                fail(&x, k, ks, "given twice (first at line %zu); YAML would keep one silently",
                     first->start_mark.line + 1);
            } else if (ks && section_known(ks)) {
                int before = x.problems;
                check_node(&x, k, ks, 1);
                check_node(&x, v, ks, 1);
                if (x.problems == before) /* tags, control bytes, depth: then the keys */
                    read_section(&x, ks, v);
            } else {
                char names[256];
                section_names(names, sizeof names);
                fail(&x, k, ks ? ks : "(key)", "unknown section (expected %s)", names);
            }
        }
        free(givers);
        for (size_t i = 0; i < NKEYS; i++)
            if ((keys[i].flags & SF_CFG_REQUIRED) && !x.at[i])
                fail(&x, NULL, keys[i].path, "is required");
        rc = x.problems ? SF_ECONFIG : SF_OK;
    }

    if (rc == SF_OK && !strcmp(cfg->output_dir, "runs/<name>"))
        snprintf(cfg->output_dir, sizeof cfg->output_dir, "runs/%s", cfg->name);
    /* The rules between keys need every key read: checked once all parsed,
     * each broken one reported. */
    if (rc == SF_OK && check_config(cfg, rule_in_file, &x) > 0)
        rc = SF_ECONFIG;
    if (root) {
        /* A config is one YAML document: a second one after '---' would be
         * silently ignored, so refuse it. */
        yaml_document_t next;
        if (!yaml_parser_load(&parser, &next)) {
            rc = problem(&x, "%s:%zu:%zu: YAML syntax error: %s%s", origin,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "unknown",
                         syntax_hint(text, len, parser.problem_mark));
        } else {
            if (yaml_document_get_root_node(&next))
                rc = problem(&x,
                             "%s:%zu:%zu: a second YAML document; a run config is one document "
                             "(remove the '---' and what follows)",
                             origin, next.start_mark.line + 1, next.start_mark.column + 1);
            yaml_document_delete(&next);
        }
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

int sf_config_parse(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                    sf_err *err) {
    return sf_config_parse_all(text, len, origin, cfg, NULL, NULL, err);
}

/* The whole file into a new heap buffer (*buf, caller frees): a regular
 * file of at most CONFIG_FILE_MAX bytes. */
#define CONFIG_FILE_MAX (1 << 20)
static int read_file(const char *path, char **buf_out, size_t *len_out, sf_err *err) {
    /* a FIFO or a device is refused as not a regular file, never waited on */
    struct stat sb;
    int fd = sf_open_regular(path, &sb, err);
    if (fd == SF_EFORMAT)
        return sf_err_set(err, SF_ECONFIG, "%s: %s, not a config file", path,
                          S_ISDIR(sb.st_mode) ? "is a directory" : "is not a regular file");
    if (fd < 0) { /* cannot open or stat it: the message says why */
        if (err)
            err->code = SF_EIO;
        return SF_EIO;
    }
    if (sb.st_size > CONFIG_FILE_MAX) {
        close(fd);
        return sf_err_set(err, SF_ECONFIG, "%s: %lld bytes; a config is at most %d", path,
                          (long long)sb.st_size, CONFIG_FILE_MAX);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > 2 * CONFIG_FILE_MAX + 8192) {
                free(buf);
                fclose(f);
                return sf_err_set(err, SF_ECONFIG, "%s: larger than %d bytes", path,
                                  CONFIG_FILE_MAX);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return sf_err_set(err, SF_ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    int rd_err = ferror(f) ? errno : 0;
    fclose(f);
    if (rd_err) {
        free(buf);
        return sf_err_set(err, SF_EIO, "%s: cannot read: %s", path, strerror(rd_err));
    }
    *buf_out = buf;
    *len_out = len;
    return SF_OK;
}

int sf_config_load(const char *path, sf_run_config *cfg, sf_err *err) {
    return sf_config_load_all(path, cfg, NULL, NULL, err);
}

int sf_config_load_all(const char *path, sf_run_config *cfg, sf_config_report_fn report,
                       void *report_ctx, sf_err *err) {
    sf_err local = {0};
    if (!err)
        err = &local;
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc < 0) {
        sf_config_defaults(cfg);
        if (report)
            report(report_ctx, err->msg);
        return rc;
    }
    rc = sf_config_parse_all(buf, len, path, cfg, report, report_ctx, err);
    free(buf);
    return rc;
}

/* ---- printing ------------------------------------------------------------- */

/* The shortest decimal that reads back as the same double. */
static const char *num(double v, char buf[32]) {
    if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
        snprintf(buf, 32, "%lld", (long long)v);
        return buf;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    return buf;
}

static void print_str(FILE *o, const char *key, const char *v) {
    fprintf(o, "  %s: \"", key);
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', o);
        fputc(*p, o);
    }
    fprintf(o, "\"\n");
}

static void print_list(FILE *o, const sf_config_key *f, const char *key, const sf_run_config *c) {
    const char *at = (const char *)c + f->off;
    int n = count_in(f, c);
    char b[32];
    switch (f->type) {
    case SF_CFG_ENCOUNTERS: {
        const sf_cfg_encounter *e = (const void *)at;
        if (n == 0)
            fprintf(o, "  # %s: every Act-1 encounter, equally (the default)\n", key);
        else
            fprintf(o, "  %s:\n", key);
        for (int i = 0; i < n; i++)
            fprintf(o, "    \"%s\": %s\n", sf_encounter_name(e[i].id), num(e[i].weight, b));
        return;
    }
    case SF_CFG_NAMES: {
        const char(*names)[SF_CFG_NAME] = (const char(*)[SF_CFG_NAME])(const void *)at;
        fprintf(o, "  %s: [", key);
        for (int i = 0; i < n; i++)
            fprintf(o, "%s\"%s\"", i ? ", " : "", names[i]);
        fprintf(o, "]\n");
        return;
    }
    default: {
        const sf_cfg_csched *s = (const void *)at;
        fprintf(o, "  %s:\n", key);
        for (int i = 0; i < n; i++) {
            if (s[i].below)
                fprintf(o, "    - {below: %u, c: %s}\n", s[i].below, num(s[i].c, b));
            else
                fprintf(o, "    - {c: %s}             # every other budget\n", num(s[i].c, b));
        }
        return;
    }
    }
}

void sf_config_print(const sf_run_config *c, FILE *o) {
    char b[32];
    for (size_t i = 0; i < NKEYS; i++) {
        const sf_config_key *f = &keys[i];
        size_t sl = section_len(f);
        if (starts_section(i))
            fprintf(o, "%.*s:\n", (int)sl, f->path);
        const char *key = f->path + sl + 1;
        const void *at = (const char *)c + f->off;
        switch (f->type) {
        case SF_CFG_STR:
        case SF_CFG_SHA256: print_str(o, key, at); break;
        case SF_CFG_U32: fprintf(o, "  %s: %u\n", key, *(const uint32_t *)at); break;
        case SF_CFG_U64:
            fprintf(o, "  %s: %llu\n", key, (unsigned long long)*(const uint64_t *)at);
            break;
        case SF_CFG_I32: fprintf(o, "  %s: %d\n", key, *(const int *)at); break;
        case SF_CFG_F64: fprintf(o, "  %s: %s\n", key, num(*(const double *)at, b)); break;
        case SF_CFG_BOOL: fprintf(o, "  %s: %s\n", key, *(const int *)at ? "true" : "false"); break;
        default: print_list(o, f, key, c); break;
        }
    }
}

/* ---- JSON --------------------------------------------------------------- */

/* A row's value as a new JSON value (NULL: out of memory). */
static json_t *row_json(const sf_config_key *f, const sf_run_config *c) {
    const void *at = (const char *)c + f->off;
    int n = is_list(f->type) ? count_in(f, c) : 0;
    switch (f->type) {
    case SF_CFG_STR:
    case SF_CFG_SHA256: return json_string(at);
    case SF_CFG_U32: return json_integer((json_int_t) * (const uint32_t *)at);
    case SF_CFG_U64: {
        uint64_t v = *(const uint64_t *)at;
        if (v <= (uint64_t)INT64_MAX)
            return json_integer((json_int_t)v);
        char text[24];
        snprintf(text, sizeof text, "%llu", (unsigned long long)v);
        return json_string(text);
    }
    case SF_CFG_I32: return json_integer(*(const int *)at);
    case SF_CFG_F64: return json_real(*(const double *)at);
    case SF_CFG_BOOL: return json_boolean(*(const int *)at);
    case SF_CFG_ENCOUNTERS: {
        const sf_cfg_encounter *e = at;
        json_t *o = json_object();
        for (int i = 0; o && i < n; i++)
            if (json_object_set_new(o, sf_encounter_name(e[i].id), json_real(e[i].weight)) < 0) {
                json_decref(o);
                return NULL;
            }
        return o;
    }
    case SF_CFG_NAMES: {
        const char(*names)[SF_CFG_NAME] = (const char(*)[SF_CFG_NAME])at;
        json_t *a = json_array();
        for (int i = 0; a && i < n; i++)
            if (json_array_append_new(a, json_string(names[i])) < 0) {
                json_decref(a);
                return NULL;
            }
        return a;
    }
    case SF_CFG_CSCHED: {
        const sf_cfg_csched *e = at;
        json_t *a = json_array();
        for (int i = 0; a && i < n; i++) {
            json_t *m = e[i].below
                            ? json_pack("{s:I,s:f}", "below", (json_int_t)e[i].below, "c", e[i].c)
                            : json_pack("{s:f}", "c", e[i].c);
            if (json_array_append_new(a, m) < 0) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    }
    return NULL;
}

char *sf_config_to_json(const sf_run_config *c) {
    json_t *root = json_object(), *section = NULL;
    for (size_t i = 0; root && i < NKEYS; i++) {
        const sf_config_key *f = &keys[i];
        size_t sl = section_len(f);
        if (starts_section(i)) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)sl, f->path);
            section = json_object();
            if (json_object_set_new(root, name, section) < 0) {
                json_decref(root);
                return NULL;
            }
        }
        if (json_object_set_new(section, f->path + sl + 1, row_json(f, c)) < 0) {
            json_decref(root);
            return NULL;
        }
    }
    if (!root)
        return NULL;
    char *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    return text;
}

/* ---- RunConfig ------------------------------------------------------------ */

/* Where a row's value lives in a RunConfig: the RunConfig field of its
 * section message (NULL: a field of RunConfig itself) and the field. */
typedef struct wire_field {
    const ProtobufCFieldDescriptor *section;
    const ProtobufCFieldDescriptor *field;
} wire_field;

/* A section: a RunConfig field holding one message. */
static int is_section(const ProtobufCFieldDescriptor *fd) {
    return fd->type == PROTOBUF_C_TYPE_MESSAGE && fd->label != PROTOBUF_C_LABEL_REPEATED;
}

/* Whether protobuf field `fd` can carry a row's type. Scalars are proto3
 * singular fields (no has_ flag); lists are repeated fields. */
static int wire_type_ok(const sf_config_key *f, const ProtobufCFieldDescriptor *fd) {
    int one = fd->label == PROTOBUF_C_LABEL_NONE, rep = fd->label == PROTOBUF_C_LABEL_REPEATED;
    switch (f->type) {
    case SF_CFG_STR:
    case SF_CFG_SHA256: return one && fd->type == PROTOBUF_C_TYPE_STRING;
    case SF_CFG_U32: return one && fd->type == PROTOBUF_C_TYPE_UINT32;
    case SF_CFG_U64: return one && fd->type == PROTOBUF_C_TYPE_UINT64;
    case SF_CFG_I32: return one && fd->type == PROTOBUF_C_TYPE_INT32;
    case SF_CFG_F64: return one && fd->type == PROTOBUF_C_TYPE_DOUBLE;
    case SF_CFG_BOOL: return one && fd->type == PROTOBUF_C_TYPE_BOOL;
    case SF_CFG_ENCOUNTERS:
        return rep && fd->type == PROTOBUF_C_TYPE_MESSAGE &&
               fd->descriptor == &spirefleet__encounter_weight__descriptor;
    case SF_CFG_NAMES: return rep && fd->type == PROTOBUF_C_TYPE_STRING;
    case SF_CFG_CSCHED:
        return rep && fd->type == PROTOBUF_C_TYPE_MESSAGE &&
               fd->descriptor == &spirefleet__cschedule__descriptor;
    }
    return 0;
}

/* Find the field a row's wire name ("section.field" or "field") names,
 * by name in the descriptors. Returns 0, or -1 when fleet.proto has no
 * such field or its type cannot carry the row's. */
static int wire_find(const sf_config_key *f, wire_field *w) {
    const ProtobufCMessageDescriptor *d = &spirefleet__run_config__descriptor;
    const char *name = wire_of(f), *dot = strchr(name, '.');
    w->section = NULL;
    if (dot) {
        char section[64];
        size_t l = (size_t)(dot - name);
        if (l >= sizeof section)
            return -1;
        memcpy(section, name, l);
        section[l] = '\0';
        w->section = protobuf_c_message_descriptor_get_field_by_name(d, section);
        if (!w->section || !is_section(w->section))
            return -1;
        d = w->section->descriptor;
        name = dot + 1;
    }
    w->field = protobuf_c_message_descriptor_get_field_by_name(d, name);
    return w->field && wire_type_ok(f, w->field) ? 0 : -1;
}

/* The message holding a row's field inside `run` (NULL: its section is
 * absent). */
static const ProtobufCMessage *wire_msg(const Spirefleet__RunConfig *run, const wire_field *w) {
    if (!w->section)
        return &run->base;
    return *(ProtobufCMessage *const *)(const void *)((const char *)run + w->section->offset);
}

#define MEMBER(msg, fd, T) ((T *)(void *)((char *)(msg) + (fd)->offset))
#define QUANT(msg, fd)     ((size_t *)(void *)((char *)(msg) + (fd)->quantifier_offset))

/* The list pools of the scratch, handed out in row order. */
typedef struct pools {
    int enc, csched, names;
} pools;

/* A list row's entries into repeated field `fd` of `msg`. */
static void list_to_proto(const sf_config_key *f, const sf_run_config *c, ProtobufCMessage *msg,
                          const ProtobufCFieldDescriptor *fd, sf_config_scratch *s, pools *used) {
    const char *at = (const char *)c + f->off;
    int n = count_in(f, c);
    if (n < 0)
        n = 0;
    if (n > f->cap)
        n = f->cap;
    switch (f->type) {
    case SF_CFG_ENCOUNTERS: {
        const sf_cfg_encounter *e = (const void *)at;
        if (n > SF_CFG_MAX_ENCOUNTERS - used->enc)
            n = SF_CFG_MAX_ENCOUNTERS - used->enc;
        Spirefleet__EncounterWeight **ptr = &s->enc_ptr[used->enc];
        for (int i = 0; i < n; i++) {
            Spirefleet__EncounterWeight *m = &s->enc[used->enc + i];
            spirefleet__encounter_weight__init(m);
            m->id = (uint32_t)e[i].id;
            m->weight = e[i].weight;
            ptr[i] = m;
        }
        used->enc += n;
        *MEMBER(msg, fd, Spirefleet__EncounterWeight **) = ptr;
        break;
    }
    case SF_CFG_NAMES: {
        const char(*names)[SF_CFG_NAME] = (const char(*)[SF_CFG_NAME])(const void *)at;
        if (n > SF_CFG_MAX_NAMES - used->names)
            n = SF_CFG_MAX_NAMES - used->names;
        char **ptr = &s->name_ptr[used->names];
        for (int i = 0; i < n; i++)
            ptr[i] = (char *)names[i];
        used->names += n;
        *MEMBER(msg, fd, char **) = ptr;
        break;
    }
    default: {
        const sf_cfg_csched *e = (const void *)at;
        if (n > SF_CFG_MAX_CSCHED - used->csched)
            n = SF_CFG_MAX_CSCHED - used->csched;
        Spirefleet__CSchedule **ptr = &s->csched_ptr[used->csched];
        for (int i = 0; i < n; i++) {
            Spirefleet__CSchedule *m = &s->csched[used->csched + i];
            spirefleet__cschedule__init(m);
            m->below = e[i].below;
            m->c = e[i].c;
            ptr[i] = m;
        }
        used->csched += n;
        *MEMBER(msg, fd, Spirefleet__CSchedule **) = ptr;
        break;
    }
    }
    *QUANT(msg, fd) = (size_t)n;
}

Spirefleet__RunConfig *sf_config_to_proto(const sf_run_config *c, sf_config_scratch *s) {
    memset(s, 0, sizeof *s);
    spirefleet__run_config__init(&s->run);
    /* a message for every section, in RunConfig's field order */
    const ProtobufCMessageDescriptor *d = &spirefleet__run_config__descriptor;
    unsigned used_sections = 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (!is_section(fd))
            continue;
        const ProtobufCMessageDescriptor *sd = fd->descriptor;
        /* no room: left out (from_proto refuses it; the schema check names it) */
        if (used_sections == SF_CFG_SECTIONS || sd->sizeof_message > sizeof s->section[0])
            continue;
        sf_config_section *sec = &s->section[used_sections++];
        protobuf_c_message_init(sd, sec);
        *MEMBER(&s->run, fd, ProtobufCMessage *) = &sec->base;
    }
    pools used = {0, 0, 0};
    for (size_t i = 0; i < NKEYS; i++) {
        const sf_config_key *f = &keys[i];
        wire_field w;
        if (wire_find(f, &w) < 0)
            continue; /* a table error: sf_config_schema_check() names it */
        ProtobufCMessage *msg = (ProtobufCMessage *)wire_msg(&s->run, &w);
        if (!msg)
            continue;
        const char *at = (const char *)c + f->off;
        const ProtobufCFieldDescriptor *fd = w.field;
        switch (f->type) {
        case SF_CFG_STR:
        case SF_CFG_SHA256: *MEMBER(msg, fd, char *) = (char *)at; break;
        case SF_CFG_U32: *MEMBER(msg, fd, uint32_t) = *(const uint32_t *)(const void *)at; break;
        case SF_CFG_U64: *MEMBER(msg, fd, uint64_t) = *(const uint64_t *)(const void *)at; break;
        case SF_CFG_I32: *MEMBER(msg, fd, int32_t) = *(const int *)(const void *)at; break;
        case SF_CFG_F64: *MEMBER(msg, fd, double) = *(const double *)(const void *)at; break;
        case SF_CFG_BOOL:
            *MEMBER(msg, fd, protobuf_c_boolean) = *(const int *)(const void *)at;
            break;
        default: list_to_proto(f, c, msg, fd, s, &used); break;
        }
    }
    return &s->run;
}

/* A list row's entries from repeated field `fd` of `msg`, with the checks
 * the YAML reader makes of each entry. */
static int list_from_proto(const sf_config_key *f, const ProtobufCMessage *msg,
                           const ProtobufCFieldDescriptor *fd, sf_run_config *c, sf_err *err) {
    const char *name = wire_of(f);
    size_t n = *QUANT(msg, fd);
    if (n > (size_t)f->cap)
        return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: too many entries (%zu, at most %d)", name,
                          n, f->cap);
    char *at = (char *)c + f->off;
    switch (f->type) {
    case SF_CFG_ENCOUNTERS: {
        Spirefleet__EncounterWeight *const *in = *MEMBER(msg, fd, Spirefleet__EncounterWeight **);
        sf_cfg_encounter *out = (void *)at;
        for (size_t i = 0; i < n; i++) {
            if (!in || !in[i])
                return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: entry %zu is missing", name, i);
            if (!(in[i]->weight > 0) || !isfinite(in[i]->weight))
                return sf_err_set(err, SF_EFORMAT,
                                  "RunConfig.%s: entry %zu: the weight must be a positive number",
                                  name, i);
            out[i] = (sf_cfg_encounter){(int)in[i]->id, in[i]->weight};
        }
        break;
    }
    case SF_CFG_NAMES: {
        char *const *in = *MEMBER(msg, fd, char **);
        char(*out)[SF_CFG_NAME] = (void *)at;
        for (size_t i = 0; i < n; i++) {
            const char *v = in && in[i] ? in[i] : "";
            size_t l = strlen(v);
            if (l >= SF_CFG_NAME)
                return sf_err_set(err, SF_EFORMAT,
                                  "RunConfig.%s: entry %zu is too long (%zu bytes)", name, i, l);
            memcpy(out[i], v, l + 1);
        }
        break;
    }
    default: {
        Spirefleet__CSchedule *const *in = *MEMBER(msg, fd, Spirefleet__CSchedule **);
        sf_cfg_csched *out = (void *)at;
        for (size_t i = 0; i < n; i++) {
            if (!in || !in[i])
                return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: entry %zu is missing", name, i);
            if (in[i]->below > 100000000u || !(in[i]->c >= 0) || in[i]->c > 100)
                return sf_err_set(err, SF_EFORMAT,
                                  "RunConfig.%s: entry %zu: below must be a simulation count and "
                                  "c a number in 0..100",
                                  name, i);
            out[i] = (sf_cfg_csched){in[i]->below, in[i]->c};
        }
        break;
    }
    }
    *count_of(f, c) = (int)n;
    return SF_OK;
}

int sf_config_from_proto(const Spirefleet__RunConfig *m, sf_run_config *c, sf_err *err) {
    if (!m)
        return sf_err_set(err, SF_EFORMAT, "RunConfig: missing");
    const ProtobufCMessageDescriptor *d = &spirefleet__run_config__descriptor;
    for (unsigned i = 0; i < d->n_fields; i++)
        if (is_section(&d->fields[i]) &&
            !*(ProtobufCMessage *const *)(const void *)((const char *)m + d->fields[i].offset))
            return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: the section is missing",
                              d->fields[i].name);
    memset(c, 0, sizeof *c);
    char why[SF_ERR_MSG_MAX], text[40];
    for (size_t i = 0; i < NKEYS; i++) {
        const sf_config_key *f = &keys[i];
        wire_field w;
        if (wire_find(f, &w) < 0)
            return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: not a field of fleet.proto",
                              wire_of(f));
        const ProtobufCMessage *msg = wire_msg(m, &w);
        const ProtobufCFieldDescriptor *fd = w.field;
        const char *v = text;
        switch (f->type) {
        case SF_CFG_STR:
        case SF_CFG_SHA256: {
            v = *MEMBER(msg, fd, char *);
            if (!v)
                v = "";
            size_t l = strlen(v);
            if (l >= f->size)
                return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: too long (%zu bytes)", wire_of(f),
                                  l);
            if (f->type == SF_CFG_SHA256) {
                /* copied as sent: sf_config_validate() refuses any other
                 * spelling than the canonical one */
                memcpy((char *)c + f->off, v, l + 1);
                continue;
            }
            break;
        }
        case SF_CFG_U32: snprintf(text, sizeof text, "%u", *MEMBER(msg, fd, uint32_t)); break;
        case SF_CFG_U64:
            snprintf(text, sizeof text, "%llu", (unsigned long long)*MEMBER(msg, fd, uint64_t));
            break;
        case SF_CFG_I32: snprintf(text, sizeof text, "%d", (int)*MEMBER(msg, fd, int32_t)); break;
        case SF_CFG_F64: snprintf(text, sizeof text, "%.17g", *MEMBER(msg, fd, double)); break;
        case SF_CFG_BOOL:
            snprintf(text, sizeof text, "%s",
                     *MEMBER(msg, fd, protobuf_c_boolean) ? "true" : "false");
            break;
        default: {
            int rc = list_from_proto(f, msg, fd, c, err);
            if (rc < 0)
                return rc;
            continue;
        }
        }
        /* the same checks as a value in a file (%.17g gives a double back exactly) */
        if (store_scalar(f, v, c, why, sizeof why) < 0)
            return sf_err_set(err, SF_EFORMAT, "RunConfig.%s: %s", wire_of(f), why);
    }
    return sf_config_validate(c, "RunConfig", err);
}

#undef MEMBER
#undef QUANT

/* The digest covers what decides the labels: the run identity, seeds and
 * job split, what is played, the search and the model. Where and how the
 * run executes (the rows flagged SF_CFG_EXEC: output dir, worker counts and
 * threads, endpoints, batching, lease and heartbeat timing, compression
 * level, the model's path) is left out, so the same run on 1 or 30 workers
 * carries the same digest in every label. */
int sf_config_digest(const sf_run_config *cfg, char hex[65]) {
    sf_run_config c = *cfg;
    for (size_t i = 0; i < NKEYS; i++) {
        if (!(keys[i].flags & SF_CFG_EXEC))
            continue;
        memset((char *)&c + keys[i].off, 0, keys[i].size);
        if (is_list(keys[i].type))
            *count_of(&keys[i], &c) = 0;
    }
    sf_config_scratch *s = malloc(sizeof *s);
    if (!s)
        return SF_ENOMEM;
    Spirefleet__RunConfig *m = sf_config_to_proto(&c, s);
    size_t n = spirefleet__run_config__get_packed_size(m);
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        free(s);
        return SF_ENOMEM;
    }
    spirefleet__run_config__pack(m, buf);
    uint8_t h[SF_SHA256_BYTES];
    int rc = sf_sha256(buf, n, h, NULL);
    sf_hex(h, sizeof h, hex);
    free(buf);
    free(s);
    return rc;
}

/* ---- the table checks itself ------------------------------------------------ */

/* How many rows carry RunConfig field `name` ("section.field" or "field"). */
static int rows_carrying(const char *name) {
    int n = 0;
    for (size_t i = 0; i < NKEYS; i++)
        n += !strcmp(wire_of(&keys[i]), name);
    return n;
}

static int covered(const char *name, sf_err *err) {
    int n = rows_carrying(name);
    if (n == 1)
        return SF_OK;
    return sf_err_set(err, SF_EFORMAT,
                      n ? "RunConfig.%s: carried by %d rows of the config schema"
                        : "RunConfig.%s: no row of the config schema carries it (fleet/config.c)",
                      name, n);
}

int sf_config_schema_check(sf_err *err) {
    int pool_enc = 0, pool_names = 0, pool_csched = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const sf_config_key *f = &keys[i];
        const char *dot = strchr(f->path, '.');
        if (!dot || dot == f->path || !dot[1] || strchr(dot + 1, '.'))
            return sf_err_set(err, SF_EFORMAT, "%s: a path is section.key", f->path);
        if (key_of(f->path) != f)
            return sf_err_set(err, SF_EFORMAT, "%s: two rows", f->path);
        /* a section's rows together, so it is printed once */
        for (size_t j = 0; starts_section(i) && j < i; j++)
            if (section_len(&keys[j]) == section_len(f) &&
                !strncmp(keys[j].path, f->path, section_len(f)))
                return sf_err_set(err, SF_EFORMAT, "%s: the rows of its section are apart",
                                  f->path);
        wire_field w;
        if (wire_find(f, &w) < 0)
            return sf_err_set(err, SF_EFORMAT,
                              "%s: RunConfig.%s is not a field of fleet.proto that can carry it",
                              f->path, wire_of(f));
        if ((f->flags & SF_CFG_REQUIRED) && f->def)
            return sf_err_set(err, SF_EFORMAT, "%s: required, yet has a default", f->path);
        if ((f->type == SF_CFG_NAMES) != (f->lookup != NULL))
            return sf_err_set(err, SF_EFORMAT, "%s: a name list, and only one, has a lookup",
                              f->path);
        if (f->oneof && f->type != SF_CFG_STR)
            return sf_err_set(err, SF_EFORMAT, "%s: only text has a oneof", f->path);
        sf_run_config scratch;
        memset(&scratch, 0, sizeof scratch);
        char why[SF_ERR_MSG_MAX];
        if (is_list(f->type) ? store_list_default(f, &scratch, why, sizeof why) < 0
                             : f->def && store_scalar(f, f->def, &scratch, why, sizeof why) < 0)
            return sf_err_set(err, SF_EFORMAT, "%s: the default '%s' does not pass: %s", f->path,
                              f->def, why);
        pool_enc += f->type == SF_CFG_ENCOUNTERS ? f->cap : 0;
        pool_names += f->type == SF_CFG_NAMES ? f->cap : 0;
        pool_csched += f->type == SF_CFG_CSCHED ? f->cap : 0;
    }
    if (pool_enc > SF_CFG_MAX_ENCOUNTERS || pool_names > SF_CFG_MAX_NAMES ||
        pool_csched > SF_CFG_MAX_CSCHED)
        return sf_err_set(err, SF_EFORMAT,
                          "the lists' entries do not fit sf_config_scratch (config.h): encounters "
                          "%d of %d, names %d of %d, c schedules %d of %d",
                          pool_enc, SF_CFG_MAX_ENCOUNTERS, pool_names, SF_CFG_MAX_NAMES,
                          pool_csched, SF_CFG_MAX_CSCHED);
    /* every field of RunConfig and of its sections has its row */
    const ProtobufCMessageDescriptor *d = &spirefleet__run_config__descriptor;
    unsigned sections = 0;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[i];
        if (!is_section(fd)) {
            if (covered(fd->name, err) < 0)
                return SF_EFORMAT;
            continue;
        }
        const ProtobufCMessageDescriptor *sd = fd->descriptor;
        if (++sections > SF_CFG_SECTIONS || sd->sizeof_message > sizeof(sf_config_section))
            return sf_err_set(err, SF_EFORMAT,
                              "RunConfig.%s: %s does not fit sf_config_scratch (config.h: add it "
                              "to sf_config_section, or raise SF_CFG_SECTIONS)",
                              fd->name, sd->name);
        for (unsigned j = 0; j < sd->n_fields; j++) {
            char name[128];
            snprintf(name, sizeof name, "%s.%s", fd->name, sd->fields[j].name);
            if (covered(name, err) < 0)
                return SF_EFORMAT;
        }
    }
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (!key_of(rules[i].key) || (rules[i].near && !key_of(rules[i].near)))
            return sf_err_set(err, SF_EFORMAT, "a rule on %s names a key without a row",
                              rules[i].key);
    return SF_OK;
}
