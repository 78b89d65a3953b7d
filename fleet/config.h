/*
 * config.h — the fleet's run configuration: YAML in, protobuf on the wire,
 * a SHA-256 digest. Every fleet process holds the same one (the coordinator
 * loads it, workers receive it in Welcome).
 *
 *   An operator writes a YAML file (schema: docs/operator.md). sf_config_load()
 *   parses it with libyaml, applies defaults, validates every field and fills
 *   a plain C struct, `sf_run_config`, with fixed-size members (no heap). The
 *   coordinator sends it to workers as a RunConfig message; the digest is the
 *   SHA-256 (common/sha256.h, libcrypto) of that message's packed bytes, so two configs that
 *   mean the same thing have the same digest whatever their YAML spelling.
 *   Every error names file:line:column and the key.
 *
 *   One table in config.c (sf_config_schema(): a row per key) drives all of
 *   it: parsing, defaults, range and oneof checks, the printed config, the
 *   fields the digest leaves out and the copy to and from RunConfig, which
 *   finds each row's protobuf field by name through protobuf-c's descriptors.
 *   A new key is a member of sf_run_config, a field of fleet.proto, a row
 *   and a line of docs/operator.md's schema table; test-config fails until
 *   all four agree. Rules between keys (sf_config_validate()) are functions
 *   in a second table, each named by the key it reports. Names of
 *   encounters, cards, relics and potions are checked against the engine's
 *   tables (engine/engine.h), endpoints with sf_endpoint_problem()
 *   (fleet/wire.h).
 *
 * Threading: all functions are reentrant; nothing here keeps state.
 */
#ifndef SF_FLEET_CONFIG_H
#define SF_FLEET_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"
#include "proto/fleet.pb-c.h"

/* ---------------------------------------------------------------------------
 * Run configuration
 * ------------------------------------------------------------------------- */
#define SF_CFG_PATH           256
#define SF_CFG_NAME           64
#define SF_CFG_MAX_ENCOUNTERS 32
#define SF_CFG_MAX_CSCHED     8
#define SF_CFG_MAX_RELICS     12
#define SF_CFG_MAX_POTIONS    3
/* A gate job's pairs travel in its shard's manifest (one GatePair per seed,
 * under 100 bytes each), so a gate run's seeds.job_size is bounded to keep
 * the manifest far below its 1 MiB limit (shard/internal.h). */
#define SF_CFG_GATE_JOB_SIZE_MAX 4096

typedef struct sf_cfg_encounter {
    int id;        /* engine encounter id                                  */
    double weight; /* relative weight (> 0)                                */
} sf_cfg_encounter;

typedef struct sf_cfg_csched {
    uint32_t below; /* applies when simulations < below; 0 = no bound      */
    double c;
} sf_cfg_csched;

typedef struct sf_run_config {
    char name[SF_CFG_NAME];
    char output_dir[SF_CFG_PATH];
    uint64_t run_seed;
    uint64_t seed_start, seed_count;
    uint32_t job_size;
    char kind[16]; /* "selfplay" */
    struct {
        char mode[16]; /* "fights" | "gauntlet" */
        int n_encounters;
        sf_cfg_encounter encounters[SF_CFG_MAX_ENCOUNTERS];
        char deck[1024];
        int n_relics;
        char relics[SF_CFG_MAX_RELICS][SF_CFG_NAME];
        int n_potions;
        char potions[SF_CFG_MAX_POTIONS][SF_CFG_NAME];
        uint32_t hp, max_hp, ascension;
        uint32_t max_turns; /* the turn cap (engine.h "The turn cap")         */
        char start[16];     /* "starter" | "rewards": where each fight starts    */
        char picker[16];    /* "random" | "greedy": the rewards prefix's picker  */
    } play;
    struct {
        uint32_t simulations, trees;
        int n_c_schedule;
        sf_cfg_csched c_schedule[SF_CFG_MAX_CSCHED];
        double widening_c, widening_alpha, rollout_tau;
        char evaluator[16]; /* "rollout" | "net" */
        int gumbel;
        uint32_t gumbel_m;
        double gumbel_c_visit, gumbel_c_scale;
        uint32_t teacher_rollouts;
        int clairvoyant;
        double cvar_alpha, cvar_lambda;
        uint32_t max_rollout_plies;
        double leaf_mix; /* network leaves: (1 - mix) * net + mix * rollout */
        double puct_c;   /* PUCT's c1 (search.h puct_c1); 0: the search's default */
    } search;
    struct {
        char bundle[SF_CFG_PATH];
        char sha256[65];
        char champion[SF_CFG_PATH]; /* follow a registry's champion file; "" = pinned */
        char url[SF_CFG_PATH];      /* fetch bundles from this template (common/fetch.h) */
        uint32_t stagger_s;         /* their first requests spread over this many seconds */
    } model;
    struct {
        char endpoint[SF_CFG_PATH];
        int spawn;
        char backend[16]; /* "cpu" | "cuda" */
        uint32_t max_batch, max_wait_us, timeout_ms, retries;
    } evald;
    struct {
        uint32_t count, threads, fights_per_thread;
    } workers;
    struct {
        char endpoint[SF_CFG_PATH];
        uint32_t lease_seconds, heartbeat_ms, heartbeat_liveness, metrics_port;
        /* live workers the coordinator admits at once (0: no limit); a
         * Hello from another past it is refused (docs/operator.md
         * "Fairness between runs") */
        uint32_t max_workers;
    } coordinator;
    struct {
        int zstd_level;
    } shard;
    struct {
        char unsearched[8]; /* "drop" | "keep": decisions with one legal action */
    } labels;
    /* run.kind gate: the two sides (champion = side 0, candidate = side 1)
     * and the decision rule (docs/gate.md). A side's 0 / -1 / "same" takes
     * the search section's value (sf_config_gate_side_search). */
    struct sf_cfg_gate_side {
        char evaluator[16]; /* "rollout" | "net"                            */
        char bundle[SF_CFG_PATH];
        char sha256[65];
        uint32_t simulations, trees;
        double widening_c, widening_alpha;
        char select[16]; /* "same" | "auto" | "uct" | "puct" | "gumbel"       */
        uint64_t salt;
        double leaf_mix; /* -1: search.leaf_mix (network sides)              */
    } champion, candidate;
    struct {
        char metric[8]; /* "win" | "score"                                  */
        double alpha, beta, delta0, delta1;
        uint32_t min_pairs, max_pairs;
    } gate;
    struct {
        uint32_t generations;     /* after generation 0                          */
        uint64_t gate_seeds;      /* seeds each generation's gate may play       */
        uint32_t net_simulations; /* self-play with a network champion; 0: search's */
    } loop;
    /* The trainer's section (docs/trainer.md): python3 -m spirefleet.train
     * reads it through `sf-fleet check --json`. Self-play runs only. */
    struct {
        char arch[16]; /* "tiny" | "base"                                  */
        char keep[8];  /* "best" | "last": the weights the final checkpoint keeps */
        uint32_t window_labels, steps, batch, warmup, seed, checkpoint_every, canary_positions;
        double lr, weight_decay, clip, val_fraction;
        double weight_value, weight_policy, weight_forecast, weight_win;
        double weight_q; /* the auxiliary chosen-move Q target (0: none)   */
        double surprise; /* loss weights from surprise, 0..1 (0: uniform)  */
    } train;
    /* What `sf-fleet slurm` writes into a run's sbatch scripts
     * (sf-fleet/slurm.h): execution only. Text "" leaves the option out
     * (the cluster's default); 0 takes what the comment says. */
    struct {
        char partition[SF_CFG_NAME];     /* coordinator and workers           */
        char gpu_partition[SF_CFG_NAME]; /* gpu-evald; "": partition          */
        char account[SF_CFG_NAME], qos[SF_CFG_NAME];
        char coordinator_time[24], worker_time[24], evald_time[24]; /* --time */
        uint32_t workers;          /* array tasks, one worker each                */
        uint32_t cpus_per_worker;  /* 0: workers.threads                          */
        char mem_per_worker[16];   /* --mem, e.g. "8G"                             */
        uint32_t gpus_per_evald;   /* --gres=gpu:N, one gpu-evald per GPU          */
        uint32_t signal_seconds;   /* SIGUSR1 (drain) this long before the limit */
        char workdir[SF_CFG_PATH]; /* --chdir; "": where sf-fleet slurm ran       */
        char bin_dir[SF_CFG_PATH]; /* the programs; "": beside this sf-fleet      */
    } slurm;
    /* CURVE on every fleet socket (common/zsec.h, docs/operator.md
     * "Security"). mode "none" is plain ZeroMQ, warned at every start. */
    struct {
        char mode[8];                 /* "curve" | "none"                              */
        char keys[SF_CFG_PATH];       /* key directory; "": sf_config_keys_dir()'s   */
        int metrics_public;           /* /metrics at the ROUTER's address, not loopback */
        double audit_fraction;        /* done jobs played again by another worker     */
        uint32_t max_workers_per_key; /* worker ids one CURVE key may hold    */
        uint32_t audit_first_jobs;    /* each key's first stored jobs: always audited */
        double max_lease_share;       /* of the jobs not done, one key's leases at most */
    } security;
} sf_run_config;

/* The run's key directory: security.keys, or <output_dir>/keys when that
 * is "" (a local run's keys, made at the coordinator's first start); ""
 * with security.mode none. */
void sf_config_keys_dir(const sf_run_config *cfg, char *out, size_t cap);

/* The side of a gate run: 0 = champion, 1 = candidate. */
static inline const struct sf_cfg_gate_side *sf_config_gate_side(const sf_run_config *c, int side) {
    return side ? &c->candidate : &c->champion;
}

/* The leaf mix a search plays with (search.h leaf_mix): a self-play run's
 * (side < 0) search.leaf_mix when its evaluator is net; a gate side's own
 * leaf_mix, or search.leaf_mix for -1, when that side's evaluator is net;
 * 0 for a rollout search. */
static inline double sf_config_leaf_mix(const sf_run_config *c, int side) {
    if (side < 0)
        return strcmp(c->search.evaluator, "net") ? 0.0 : c->search.leaf_mix;
    const struct sf_cfg_gate_side *g = sf_config_gate_side(c, side);
    if (strcmp(g->evaluator, "net"))
        return 0.0;
    return g->leaf_mix >= 0.0 ? g->leaf_mix : c->search.leaf_mix;
}

/* Fill every field with its default (docs/operator.md lists them). The
 * required fields (run.name, seeds.count) are left empty/zero. */
void sf_config_defaults(sf_run_config *cfg);

/* Parse YAML text; `origin` names the source in messages (a file path).
 * Returns SF_OK or SF_ECONFIG with the first problem as
 * "origin:line:col: key: problem" in err (no position for a required key
 * the text lacks). Unknown keys, wrong types, out-of-range values, missing
 * required fields, keys that do not apply, a second YAML document and the
 * cross-field rules of sf_config_validate() are all errors. */
int sf_config_parse(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                    sf_err *err);

/* Receives each problem of a config as one line: every key's own problems
 * in file order, then each broken rule between keys, then a second
 * document. */
typedef void (*sf_config_report_fn)(void *ctx, const char *problem);

/* sf_config_parse(), and `report` (may be NULL) receives every problem, not
 * only the first: parsing goes on past a bad key. The cross-field rules
 * run only on a config whose keys all parsed (each broken one reported). */
int sf_config_parse_all(const char *text, size_t len, const char *origin, sf_run_config *cfg,
                        sf_config_report_fn report, void *report_ctx, sf_err *err);

/* Read and parse a YAML file (at most 1 MiB). SF_EIO when it cannot be
 * opened or read (the OS's reason), SF_ECONFIG when it is a directory, a
 * FIFO or a device rather than a regular file, or too large. */
int sf_config_load(const char *path, sf_run_config *cfg, sf_err *err);

/* sf_config_load() reporting every problem as sf_config_parse_all() does
 * (a read error is reported too, as the only problem). */
int sf_config_load_all(const char *path, sf_run_config *cfg, sf_config_report_fn report,
                       void *report_ctx, sf_err *err);

/* Write the effective config as YAML (the same schema sf_config_parse reads). */
void sf_config_print(const sf_run_config *cfg, FILE *out);

/* The effective config as one line of JSON (jansson), sections as objects
 * keyed as in YAML, in the schema's order: {"run": {"name": ..., ...},
 * "seeds": {...}, ..., "train": {...}}. Numbers are JSON numbers (a u64
 * above 2^63 - 1, beyond jansson's integers, is its decimal text), booleans
 * true/false, an encounter mix an object of name to weight ({} = every
 * encounter, equally), name lists arrays, a c schedule an array of
 * {"below": N, "c": X} ({"c": X} for the unbounded last entry). Returns a
 * heap string (free()), or NULL when out of memory. `sf-fleet check --json`
 * prints it: the one place programs read the defaults from. */
char *sf_config_to_json(const sf_run_config *cfg);

/* Room for one of RunConfig's section messages (PlayConfig, SearchConfig,
 * ...): to_proto hands them out in the order of RunConfig's fields. A new
 * section message joins this union; sf_config_schema_check() refuses one
 * that does not fit. */
typedef union sf_config_section {
    ProtobufCMessage base;
    Spirefleet__PlayConfig play;
    Spirefleet__SearchConfig search;
    Spirefleet__ModelConfig model;
    Spirefleet__EvaldConfig evald;
    Spirefleet__WorkerConfig workers;
    Spirefleet__CoordinatorConfig coordinator;
    Spirefleet__ShardConfig shard;
    Spirefleet__LabelsConfig labels;
    Spirefleet__GateSide side;
    Spirefleet__GateConfig gate;
    Spirefleet__TrainConfig train;
    Spirefleet__LoopConfig loop;
} sf_config_section;

#define SF_CFG_SECTIONS  16
#define SF_CFG_MAX_NAMES (SF_CFG_MAX_RELICS + SF_CFG_MAX_POTIONS) /* all name lists together */

/* The storage of sf_config_to_proto()'s message and its parts. */
typedef struct sf_config_scratch {
    Spirefleet__RunConfig run;
    sf_config_section section[SF_CFG_SECTIONS];
    Spirefleet__EncounterWeight enc[SF_CFG_MAX_ENCOUNTERS];
    Spirefleet__EncounterWeight *enc_ptr[SF_CFG_MAX_ENCOUNTERS];
    Spirefleet__CSchedule csched[SF_CFG_MAX_CSCHED];
    Spirefleet__CSchedule *csched_ptr[SF_CFG_MAX_CSCHED];
    char *name_ptr[SF_CFG_MAX_NAMES];
} sf_config_scratch;

/* Convert to and from the RunConfig message. to_proto fills `msg` and the
 * sub-messages in `scratch`, which must outlive `msg`, and so must `cfg`:
 * the message's strings point into it (no heap). from_proto checks every
 * field as the YAML path does (length, range, oneof) and the rules between
 * keys, and names the bad field ("RunConfig.search.trees: ..."). */
Spirefleet__RunConfig *sf_config_to_proto(const sf_run_config *cfg, sf_config_scratch *scratch);
int sf_config_from_proto(const Spirefleet__RunConfig *msg, sf_run_config *cfg, sf_err *err);

/* The run's config digest: hex SHA-256 of the packed RunConfig (65 bytes
 * including the NUL) with the execution-only keys (SF_CFG_EXEC) cleared.
 * Returns SF_OK or SF_ENOMEM. */
int sf_config_digest(const sf_run_config *cfg, char hex[65]);

/* Validate cross-field rules (model required for evaluator "net", weights,
 * c schedule order, names known to the engine). Called by parse/from_proto. */
int sf_config_validate(const sf_run_config *cfg, const char *origin, sf_err *err);

/* Whether `path` may be written into an sbatch script as it is (slurm.*
 * paths and what `sf-fleet slurm` derives): absolute, since a job runs
 * wherever Slurm puts it, and made of nothing a shell or an #SBATCH line
 * reads differently (SF_CFG_SCRIPT_PATH_RULE says what). */
int sf_config_script_path_ok(const char *path);
#define SF_CFG_SCRIPT_PATH_RULE \
    "a path in sbatch scripts must be absolute and hold only letters, digits and / . _ + - @"

/* ---------------------------------------------------------------------------
 * The schema: one row per key, in the order sf_config_print() writes them
 * (keys of a section together). Read-only; the rows live in config.c.
 * ------------------------------------------------------------------------- */

/* What a key holds, and the type of its sf_run_config member. */
typedef enum sf_config_type {
    SF_CFG_STR,        /* char[size]: text */
    SF_CFG_SHA256,     /* char[65]: "" or 64 hex digits, stored in lower case */
    SF_CFG_U32,        /* uint32_t */
    SF_CFG_U64,        /* uint64_t */
    SF_CFG_I32,        /* int */
    SF_CFG_F64,        /* double, finite */
    SF_CFG_BOOL,       /* int, 0 or 1 */
    SF_CFG_ENCOUNTERS, /* sf_cfg_encounter[cap]: a mapping of name or pool to weight */
    SF_CFG_NAMES,      /* char[cap][SF_CFG_NAME]: a list of names `lookup` knows */
    SF_CFG_CSCHED,     /* sf_cfg_csched[cap]: a list of {below: N, c: X} */
} sf_config_type;

/* Row flags. SF_CFG_EXEC: where and how the run executes, not what it
 * labels (endpoints, worker counts, batching, paths): cleared before the
 * digest. */
#define SF_CFG_REQUIRED 1u /* a file must give it; it has no default */
#define SF_CFG_EXEC     2u
/* The run kinds a key applies to; a row with none of these applies to
 * every kind. Under another kind a value other than the default would be
 * ignored, so it is refused (naming the kinds it needs). */
#define SF_CFG_SELFPLAY 4u  /* run.kind selfplay (the labels, the model)      */
#define SF_CFG_GATE     8u  /* run.kind gate (the sides, the rule)            */
#define SF_CFG_LOOP     16u /* run.kind loop (generations; labels, the rule)  */
#define SF_CFG_KINDS    (SF_CFG_SELFPLAY | SF_CFG_GATE | SF_CFG_LOOP)

typedef struct sf_config_key {
    const char *path; /* the YAML key, "section.key" */
    /* The RunConfig field: "search.simulations" (a field of a section
     * message) or "run_seed" (of RunConfig itself); NULL: the same as path. */
    const char *wire;
    sf_config_type type;
    size_t off, size;  /* the member of sf_run_config */
    size_t count_off;  /* lists: their int entry count */
    int cap;           /* lists: the most entries */
    double lo, hi;     /* numbers: the range, inclusive; text: lo = the least length */
    const char *oneof; /* text: "a|b|c", or NULL for free text */
    /* The default, spelled as sf_config_print() writes the value (numbers,
     * true/false, text unquoted); NULL: zero or empty. Name lists: the
     * names, '|' between them. A c schedule: entries "BELOW:C", or "C" for
     * the unbounded last one, '|' between them. Encounters: always NULL
     * (every encounter, equally). */
    const char *def;
    int (*lookup)(const char *name); /* SF_CFG_NAMES: a name's id, or < 0 */
    unsigned flags;                  /* SF_CFG_REQUIRED | SF_CFG_EXEC */
} sf_config_key;

/* The rows (*n receives how many). */
const sf_config_key *sf_config_schema(size_t *n);

/* Whether the rows agree with themselves, with fleet.proto and with the
 * rules between keys: every path "section.key", unique, its section's rows
 * together; every row's RunConfig field exists once, with a matching type;
 * every field of RunConfig and of its sections has a row; each section
 * message fits sf_config_section and the lists fit the scratch; every
 * default passes its row's checks; every rule names a row. Returns SF_OK,
 * or SF_EFORMAT with the first disagreement (a test runs it: the table is
 * static, so it passes always or never). */
int sf_config_schema_check(sf_err *err);

#endif
