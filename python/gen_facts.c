/* gen_facts.c — writes spirefleet/facts.py at build time: every C fact the
 * Python side needs besides the label contract (contract.py), each taken
 * from the header of the module that owns it, so Python cannot drift from
 * C:
 *
 *   tokenizer    engine/engine.h     version, sizes, token types, the CTX and
 *                                    PLAYER columns, the persisted columns
 *   shard file   shard/shard.h       format versions, magics, trailer, names
 *   batches      shard/batch.h       the batch reader's field table
 *   bundles      model/model.h       format names and version, policy input;
 *                                    the canary's precisions, outputs,
 *                                    tolerance keys and the rule of the
 *                                    measured defaults
 *   gate         gate/stats.h        verdict words, verdict.json keys
 *   loop         sf-fleet/loop_state.h   loop.json keys, stages, the
 *                                    trainer's and exporter's result keys
 *
 * usage: gen_facts OUT.py      write the module
 *        gen_facts --probe     print positions of a few played fights as
 *                              JSON lines {"type", "cont", "obs"}: the
 *                              tokenizer's output beside the engine's own
 *                              observation, for the test that checks the
 *                              persisted columns against the engine
 *                              (tests/integration/test_facts.py). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "engine/engine.h"
#include "gate/stats.h"
#include "label/label.h"
#include "model/model.h"
#include "sf-fleet/loop_state.h"
#include "shard/batch.h"
#include "shard/shard.h"

/* A Python float literal of x (always with a point or an exponent). */
static void pyfloat(FILE *f, double x) {
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) { /* the shortest that reads back as x */
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    fputs(buf, f);
    if (!strpbrk(buf, ".en"))
        fputs(".0", f);
}

static void pystr(FILE *f, const char *name, const char *value) {
    fprintf(f, "%s = \"%s\"\n", name, value);
}

/* "SF_FEAT_CTX_MON_HP" style names, lower-cased after `prefix`. */
#define COL(prefix, name) \
    { prefix##name, #name }
typedef struct col {
    int index;
    const char *name;
} col;

static const col ctx_cols[] = {
    COL(SF_FEAT_CTX_, TURN),          COL(SF_FEAT_CTX_, ENERGY),
    COL(SF_FEAT_CTX_, CARDS_PLAYED),  COL(SF_FEAT_CTX_, ATTACKS_PLAYED),
    COL(SF_FEAT_CTX_, HAND_N),        COL(SF_FEAT_CTX_, DRAW_N),
    COL(SF_FEAT_CTX_, DISCARD_N),     COL(SF_FEAT_CTX_, EXHAUST_N),
    COL(SF_FEAT_CTX_, DRAW_KNOWN),    COL(SF_FEAT_CTX_, CHOICE_OPEN),
    COL(SF_FEAT_CTX_, CHOICE_AMOUNT), COL(SF_FEAT_CTX_, INCOMING),
    COL(SF_FEAT_CTX_, UNCOVERED),     COL(SF_FEAT_CTX_, ALIVE),
    COL(SF_FEAT_CTX_, MON_HP),        COL(SF_FEAT_CTX_, MON_HP_FRAC),
};
static const col player_cols[] = {
    COL(SF_FEAT_PL_, HP),
    COL(SF_FEAT_PL_, MAX_HP),
    COL(SF_FEAT_PL_, HP_FRAC),
    COL(SF_FEAT_PL_, BLOCK),
    COL(SF_FEAT_PL_, ENERGY),
    COL(SF_FEAT_PL_, GOLD),
    COL(SF_FEAT_PL_, HP_LOSSES),
    COL(SF_FEAT_PL_, POTIONS_USED),
    COL(SF_FEAT_PL_, EMPTY_SLOTS),
    COL(SF_FEAT_PL_, EOT_BLOCK),
    COL(SF_FEAT_PL_, EOT_SELF_DAMAGE),
    COL(SF_FEAT_PL_, DANGER),
    COL(SF_FEAT_PL_, STR),
    COL(SF_FEAT_PL_, DEX),
    COL(SF_FEAT_PL_, VULN),
    COL(SF_FEAT_PL_, WEAK),
};
static const col token_types[] = {
    COL(SF_TOK_, PAD),          COL(SF_TOK_, CTX),       COL(SF_TOK_, PLAYER),
    COL(SF_TOK_, MONSTER),      COL(SF_TOK_, INTENT),    COL(SF_TOK_, STATUS),
    COL(SF_TOK_, CARD_HAND),    COL(SF_TOK_, CARD_DRAW), COL(SF_TOK_, CARD_DISCARD),
    COL(SF_TOK_, CARD_EXHAUST), COL(SF_TOK_, RELIC),     COL(SF_TOK_, POTION),
};
_Static_assert(sizeof ctx_cols / sizeof *ctx_cols == SF_FEAT_NCONT, "every CTX column named");
_Static_assert(sizeof player_cols / sizeof *player_cols == SF_FEAT_NCONT,
               "every PLAYER column named");
_Static_assert(sizeof token_types / sizeof *token_types == SF_FEAT_NTYPES, "every token type");

/* The forecast persistence baseline: where a position's current value of
 * each forecast column is among its tokens. block_at_enemy_turn persists
 * as the player's current block. */
typedef struct persist {
    int forecast; /* SF_FORECAST_* */
    int type;     /* SF_TOK_*      */
    int column;
    float scale;
} persist;
static const persist persisted[SF_FORECAST_COLS] = {
    {SF_FORECAST_PLAYER_HP, SF_TOK_PLAYER, SF_FEAT_PL_HP, SF_FEAT_SCALE_PL_HP},
    {SF_FORECAST_BLOCK_AT_ENEMY_TURN, SF_TOK_PLAYER, SF_FEAT_PL_BLOCK, SF_FEAT_SCALE_PL_BLOCK},
    {SF_FORECAST_INCOMING_DAMAGE, SF_TOK_CTX, SF_FEAT_CTX_INCOMING, SF_FEAT_SCALE_INCOMING},
    {SF_FORECAST_MONSTER_HP_TOTAL, SF_TOK_CTX, SF_FEAT_CTX_MON_HP, SF_FEAT_SCALE_CTX_MON_HP},
    {SF_FORECAST_MONSTERS_ALIVE, SF_TOK_CTX, SF_FEAT_CTX_ALIVE, SF_FEAT_SCALE_ALIVE},
};

/* sf_batch_dims as Python's ctypes sees it: uint32 fields in this order. */
#define DIM(n) \
    { offsetof(sf_batch_dims, n), #n }
static const struct {
    size_t off;
    const char *name;
} batch_dims[] = {DIM(b), DIM(t), DIM(q), DIM(c), DIM(f), DIM(g)};
_Static_assert(sizeof(sf_batch_dims) == sizeof batch_dims / sizeof *batch_dims * sizeof(uint32_t),
               "every sf_batch_dims field listed");
_Static_assert(offsetof(sf_err, msg) == sizeof(int) &&
                   sizeof(sf_err) == sizeof(int) + SF_ERR_MSG_MAX,
               "sf_err is an int code and the message");

static void lower_tuple(FILE *f, const char *name, const col *c, int n) {
    fprintf(f, "%s = (", name);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\"", i ? ", " : "");
        for (const char *p = c[i].name; *p; p++)
            fputc(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p, f);
        fputc('"', f);
    }
    fprintf(f, "%s)\n", n == 1 ? "," : "");
}

static int write_facts(FILE *f) {
    fprintf(f, "\"\"\"Facts of the C modules that Python needs (generated at build time by\n"
               "python/gen_facts.c from the modules' headers; do not edit).\n\n"
               "Tokenizer (engine/engine.h), shard file (shard/shard.h), batch fields\n"
               "(shard/batch.h), canary tolerances (model/model.h), gate verdicts\n"
               "(gate/stats.h), loop state and result lines (sf-fleet/loop_state.h).\n"
               "The label contract is contract.py.\n\"\"\"\n\n");

    fprintf(f, "# ---- tokenizer (engine/engine.h, docs/model.md) ----\n");
    fprintf(f, "FEAT_VERSION = %d\n", SF_FEAT_VERSION);
    fprintf(f, "MAX_TOKENS = %d\n", SF_FEAT_MAX_TOKENS);
    fprintf(f, "NCAT = %d\n", SF_FEAT_NCAT);
    fprintf(f, "NCONT = %d\n", SF_FEAT_NCONT);
    fprintf(f, "MAX_QUERIES = %d\n", SF_FEAT_MAX_QUERIES);
    fprintf(f, "NQCONT = %d\n", SF_FEAT_NQCONT);
    fprintf(f, "NTYPES = %d\n", SF_FEAT_NTYPES);
    fprintf(f, "VOCAB = (%d, %d, %d, %d)\n", SF_FEAT_VOCAB0, SF_FEAT_VOCAB1, SF_FEAT_VOCAB2,
            SF_FEAT_VOCAB3);
    fprintf(f, "# token type ids by name (index = type id)\n");
    lower_tuple(f, "TOKEN_TYPES", token_types, SF_FEAT_NTYPES);
    for (int i = 0; i < SF_FEAT_NTYPES; i++)
        fprintf(f, "TOK_%s = %d\n", token_types[i].name, token_types[i].index);
    fprintf(f, "# continuous columns of the CTX and PLAYER tokens (index = column)\n");
    lower_tuple(f, "CTX_COLUMNS", ctx_cols, SF_FEAT_NCONT);
    lower_tuple(f, "PLAYER_COLUMNS", player_cols, SF_FEAT_NCONT);
    fprintf(f, "# forecast column -> (token type, continuous column, scale): where a\n"
               "# position's current value is (value = column * scale)\n");
    fprintf(f, "PERSIST = {\n");
    for (int i = 0; i < SF_FORECAST_COLS; i++) {
        fprintf(f, "    \"%s\": (%d, %d, ", sf_forecast_column_name(persisted[i].forecast),
                persisted[i].type, persisted[i].column);
        pyfloat(f, persisted[i].scale);
        fprintf(f, "),\n");
    }
    fprintf(f, "}\n\n");

    fprintf(f, "# ---- shard files (shard/shard.h, docs/format.md) ----\n");
    fprintf(f, "SHARD_FORMAT_VERSION = %d\n", SF_SHARD_FORMAT_VERSION);
    fprintf(f, "SHARD_FORMAT_VERSIONS = (");
    for (int v = SF_SHARD_FORMAT_VERSION_MIN; v <= SF_SHARD_FORMAT_VERSION; v++)
        fprintf(f, "%s%d", v > SF_SHARD_FORMAT_VERSION_MIN ? ", " : "", v);
    fprintf(f, ")\n");
    pystr(f, "SHARD_SUFFIX", SF_SHARD_SUFFIX);
    pystr(f, "SHARD_TEMP_SUFFIX", SF_SHARD_TEMP_SUFFIX);
    pystr(f, "QUARANTINE_FILE", SF_SHARD_QUARANTINE_FILE);
    fprintf(f, "BLOCK_MAGIC = {1: 0x%08X, 2: 0x%08X}  # format -> u32 little-endian\n",
            SF_BLOCK_MAGIC, SF_BLOCK_MAGIC_V2);
    fprintf(f, "TRAILER_MAGIC = b\"%s\"\n", SF_TRAILER_MAGIC);
    fprintf(f, "TRAILER_VERSION = %u\n", SF_TRAILER_VERSION);
    fprintf(f, "TRAILER_FOOTER = %u\n", SF_TRAILER_FOOTER);
    fprintf(f, "DB_RECORDS = b\"%s\"\n", SF_DB_RECORDS);
    fprintf(f, "DB_META = b\"%s\"\n", SF_DB_META);
    fprintf(f, "MANIFEST_KEY = b\"%s\"\n", SF_MANIFEST_KEY);
    fprintf(f, "MAX_RECORD_BYTES = %u\n", SF_SHARD_MAX_RECORD_BYTES);
    fprintf(f, "MAX_BLOCK_RECORDS = %d\n", SF_SHARD_MAX_BLOCK_RECORDS);
    pystr(f, "COUNTER_ENGINE_LIMIT", SF_SHARD_COUNTER_ENGINE_LIMIT);
    pystr(f, "COUNTER_TURN_LIMIT", SF_SHARD_COUNTER_TURN_LIMIT);
    fprintf(f, "\n");

    fprintf(f,
            "# ---- batches (shard/batch.h): the ctypes view of sf_err and sf_batch_dims ----\n");
    fprintf(f, "ERR_MSG_MAX = %d  # sf_err.msg, after an int code\n", SF_ERR_MSG_MAX);
    for (size_t i = 0; i < sizeof batch_dims / sizeof *batch_dims; i++)
        if (batch_dims[i].off != i * sizeof(uint32_t)) {
            fprintf(stderr, "gen_facts: sf_batch_dims.%s is not field %zu\n", batch_dims[i].name,
                    i);
            return 1;
        }
    fprintf(f, "BATCH_DIMS = (");
    for (size_t i = 0; i < sizeof batch_dims / sizeof *batch_dims; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", batch_dims[i].name);
    fprintf(f, ")  # uint32 each, in this order\n");
    fprintf(f, "# (name, dtype, dims after B) of every batch field\n");
    fprintf(f, "BATCH_FIELDS = (\n");
    for (int i = 0; i < sf_batch_field_count(); i++)
        fprintf(f, "    (\"%s\", \"%s\", \"%s\"),\n", sf_batch_field_name(i),
                sf_batch_field_dtype(i), sf_batch_field_dims(i));
    fprintf(f, ")\n\n");

    fprintf(f, "# ---- model bundles (model/model.h, docs/model.md) ----\n");
    pystr(f, "BUNDLE_FORMAT", SF_BUNDLE_FORMAT);
    fprintf(f, "BUNDLE_FORMAT_VERSION = %d  # written; 1 is still read\n",
            SF_BUNDLE_FORMAT_VERSION);
    pystr(f, "POSITIONS_FORMAT", SF_POSITIONS_FORMAT);
    pystr(f, "POLICY_INPUT", SF_POLICY_INPUT);
    fprintf(f, "\n# ---- canary tolerances (model/model.h, docs/model.md) ----\n");
    fprintf(f, "PRECISIONS = (");
    for (int p = 0; p < SF_PRECISIONS; p++)
        fprintf(f, "%s\"%s\"", p ? ", " : "", sf_precision_name((sf_precision)p));
    fprintf(f, ")\nCANARY_OUTPUTS = (");
    for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
        fprintf(f, "%s\"%s\"", o ? ", " : "", sf_canary_output_name((sf_canary_output)o));
    fprintf(f, ")\n");
    pystr(f, "TOLERANCE_KEY_PREFIX", SF_CANARY_TOL_KEY_PREFIX);
    pystr(f, "TOLERANCE_SOURCE_KEY", SF_CANARY_TOL_SOURCE_KEY);
    pystr(f, "TOLERANCE_V1_KEY", SF_CANARY_TOL_V1_KEY);
    fprintf(f, "TOLERANCE_PARTS = (\"%s\", \"%s\")\n", SF_CANARY_TOL_ABS, SF_CANARY_TOL_REL);
    fprintf(f, "TOL_MARGIN = ");
    pyfloat(f, SF_CANARY_TOL_MARGIN);
    fprintf(f, "\nTOL_REL = {");
    for (int p = 0; p < SF_PRECISIONS; p++) {
        fprintf(f, "%s\"%s\": ", p ? ", " : "", sf_precision_name((sf_precision)p));
        pyfloat(f, sf_canary_tol_rel[p]);
    }
    fprintf(f, "}\nTOL_ABS_FLOOR = {");
    for (int p = 0; p < SF_PRECISIONS; p++) {
        fprintf(f, "%s\"%s\": ", p ? ", " : "", sf_precision_name((sf_precision)p));
        pyfloat(f, sf_canary_tol_abs_floor[p]);
    }
    fprintf(f, "}\n\n");

    fprintf(f, "# ---- gate verdicts (gate/stats.h, docs/gate.md) ----\n");
    pystr(f, "VERDICT_CONTINUE", sf_gate_decision_name(SF_GATE_CONTINUE));
    pystr(f, "VERDICT_PROMOTE", sf_gate_decision_name(SF_GATE_PROMOTE));
    pystr(f, "VERDICT_REJECT", sf_gate_decision_name(SF_GATE_REJECT));
    pystr(f, "VERDICT_INCONCLUSIVE", sf_gate_decision_name(SF_GATE_INCONCLUSIVE));
    fprintf(f, "VERDICT_WORDS = (VERDICT_CONTINUE, VERDICT_PROMOTE, VERDICT_REJECT, "
               "VERDICT_INCONCLUSIVE)\n");
    fprintf(f, "# the keys every verdict.json holds\nVERDICT_KEYS = (");
    static const char *const vkeys[] = SF_GATE_VERDICT_REQUIRED;
    for (size_t i = 0; i < sizeof vkeys / sizeof *vkeys; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", vkeys[i]);
    fprintf(f, ")\n# the keys of every pairs.jsonl line\nPAIR_KEYS = (");
    static const char *const pkeys[] = SF_GATE_PAIRS_REQUIRED;
    for (size_t i = 0; i < sizeof pkeys / sizeof *pkeys; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", pkeys[i]);
    fprintf(f, ")\n\n");

    fprintf(f, "# ---- the training loop (sf-fleet/loop_state.h, docs/loop.md) ----\n");
#define K(name) pystr(f, #name, SF_##name)
    K(LOOP_KEY_RUN);
    K(LOOP_KEY_CONFIG_DIGEST);
    K(LOOP_KEY_GENERATION);
    K(LOOP_KEY_STAGE);
    K(LOOP_KEY_CHAMPION);
    K(LOOP_KEY_CANDIDATE);
    K(LOOP_KEY_HISTORY);
    K(LOOP_KEY_GENERATIONS);
    K(LOOP_KEY_LABELS);
    K(LOOP_KEY_SELFPLAY_MODEL);
    K(LOOP_KEY_SELFPLAY_SECONDS);
    K(LOOP_KEY_TRAIN);
    K(LOOP_KEY_TRAIN_SECONDS);
    K(LOOP_KEY_EXPORT_SECONDS);
    K(LOOP_KEY_SIBLINGS);
    K(LOOP_KEY_GATE_SECONDS);
    K(LOOP_KEY_VERDICT);
    K(LOOP_KEY_PAIRS);
    K(LOOP_KEY_LLR);
    K(LOOP_KEY_SCORE_DIFF);
    K(LOOP_KEY_WIN_RATE_DIFF);
    K(LOOP_KEY_GATE);
    K(LOOP_ROLLOUT);
    K(SIBLINGS_KEY_DECISIONS);
    K(SIBLINGS_KEY_NET_ACCURACY);
    K(SIBLINGS_KEY_ROLLOUT_ACCURACY);
    K(SIBLINGS_KEY_ERROR);
    fprintf(f, "LOOP_STAGES = (\"%s\", \"%s\", \"%s\", \"%s\", \"%s\", \"%s\")\n",
            SF_LOOP_STAGE_SELFPLAY, SF_LOOP_STAGE_TRAIN, SF_LOOP_STAGE_EXPORT, SF_LOOP_STAGE_GATE,
            SF_LOOP_STAGE_DECIDE, SF_LOOP_STAGE_DONE);
    fprintf(f, "# the trainer's result line, the exporter's\n");
    K(TRAIN_RESULT_CHECKPOINT);
    K(TRAIN_RESULT_VAL);
    K(TRAIN_RESULT_BASELINE);
    K(TRAIN_RESULT_LABELS);
    K(TRAIN_RESULT_TRAIN_RECORDS);
    K(TRAIN_RESULT_VAL_SEEDS);
    K(EXPORT_RESULT_SHA256);
#undef K
    return 0;
}

/* A few fights played by the engine's heuristic, every position's tokens
 * and observation as one JSON line. */
static int probe(void) {
    int lines = 0;
    for (int e = 0; e < sf_encounter_count(); e += 3) { /* weak, strong, elite, boss fights */
        sf_fight_spec spec;
        sf_fight_spec_default(&spec);
        spec.encounter = e;
        spec.seed = 1000 + (uint64_t)e;
        static sf_state s;
        sf_err err = {0};
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "gen_facts: %s: %s\n", sf_encounter_name(e), err.msg);
            return 1;
        }
        uint64_t rng = 7 + (uint64_t)e;
        for (int step = 0; step < 60 && !sf_engine_is_terminal(&s); step++) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            static sf_feat ft;
            sf_engine_feat(&s, acts, n, &ft);
            sf_observation ob;
            sf_engine_observe(&s, &ob);
            printf("{\"type\": [");
            for (int t = 0; t < ft.n_tokens; t++)
                printf("%s%d", t ? ", " : "", ft.type[t]);
            printf("], \"cont\": [");
            for (int t = 0; t < ft.n_tokens; t++) {
                printf("%s[", t ? ", " : "");
                for (int c = 0; c < SF_FEAT_NCONT; c++)
                    printf("%s%.9g", c ? ", " : "", (double)ft.cont[t][c]);
                printf("]");
            }
            /* the engine's own numbers for each forecast column, now */
            printf("], \"obs\": {\"player_hp\": %d, \"block_at_enemy_turn\": %d, "
                   "\"incoming_damage\": %d, \"monster_hp_total\": %d, \"monsters_alive\": %d}}\n",
                   ob.hp, ob.block, ob.incoming_damage, ob.monster_hp_total, ob.monsters_alive);
            lines++;
            sf_action a;
            if (sf_engine_heuristic_action(&s, 0.5, &rng, &a) < 0 ||
                sf_engine_apply(&s, a, NULL) < 0)
                break;
        }
    }
    return lines > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "--probe"))
        return probe();
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: gen_facts OUT.py | gen_facts --probe\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int bad = write_facts(f);
    if (fclose(f) != 0 || bad) {
        perror(argv[1]);
        return 1;
    }
    return 0;
}
