/*
 * loop_state.h — the names the training loop (loop.c, docs/loop.md) and its
 * readers share: the keys of loop.json, its stages, the keys of the
 * trainer's and the exporter's result lines that the loop reads. Each is
 * spelled here once; python/spirefleet/facts.py is generated from this
 * header (python/gen_facts.c), so loop_report.py and train.py use the same
 * words.
 *
 * Header only: string constants, no code.
 */
#ifndef SF_SF_FLEET_LOOP_STATE_H
#define SF_SF_FLEET_LOOP_STATE_H

#include "gate/stats.h"

/* loop.json, top level. */
#define SF_LOOP_KEY_RUN           "run"
#define SF_LOOP_KEY_CONFIG_DIGEST "config_digest"
#define SF_LOOP_KEY_GENERATION    "generation" /* also each record's number     */
#define SF_LOOP_KEY_STAGE         "stage"
#define SF_LOOP_KEY_CHAMPION      "champion"  /* a SHA-256, or SF_LOOP_ROLLOUT */
#define SF_LOOP_KEY_CANDIDATE     "candidate" /* the latest exported bundle     */
#define SF_LOOP_KEY_HISTORY       "history"   /* one entry per decided gate     */
#define SF_LOOP_KEY_GENERATIONS   "generations"

/* A generation's record (loop.json "generations"[g]). */
#define SF_LOOP_KEY_LABELS           "labels"
#define SF_LOOP_KEY_SELFPLAY_MODEL   "selfplay_model"
#define SF_LOOP_KEY_SELFPLAY_SECONDS "selfplay_seconds"
#define SF_LOOP_KEY_TRAIN            "train" /* the trainer's result line */
#define SF_LOOP_KEY_TRAIN_SECONDS    "train_seconds"
#define SF_LOOP_KEY_EXPORT_SECONDS   "export_seconds"
#define SF_LOOP_KEY_SIBLINGS         "siblings"
#define SF_LOOP_KEY_GATE_SECONDS     "gate_seconds"
/* A history entry's and a record's gate fields carry verdict.json's names. */
#define SF_LOOP_KEY_VERDICT       SF_GATE_VKEY_VERDICT
#define SF_LOOP_KEY_PAIRS         SF_GATE_VKEY_PAIRS
#define SF_LOOP_KEY_LLR           SF_GATE_VKEY_LLR
#define SF_LOOP_KEY_SCORE_DIFF    SF_GATE_VKEY_SCORE_DIFF
#define SF_LOOP_KEY_WIN_RATE_DIFF SF_GATE_VKEY_WIN_RATE_DIFF
#define SF_LOOP_KEY_GATE          "gate" /* the verdict.json, below the run dir */

/* The sibling ranking a generation records (sf-fleet siblings --json,
 * siblings.c; the record's SF_LOOP_KEY_SIBLINGS), the keys its readers use. */
#define SF_SIBLINGS_KEY_DECISIONS        "decisions"
#define SF_SIBLINGS_KEY_NET_ACCURACY     "net_pairwise_accuracy"
#define SF_SIBLINGS_KEY_ROLLOUT_ACCURACY "rollout_pairwise_accuracy"
#define SF_SIBLINGS_KEY_ERROR            "error" /* why there is no ranking */

/* The stages, in order (loop.json "stage"). */
#define SF_LOOP_STAGE_SELFPLAY "selfplay"
#define SF_LOOP_STAGE_TRAIN    "train"
#define SF_LOOP_STAGE_EXPORT   "export"
#define SF_LOOP_STAGE_GATE     "gate"
#define SF_LOOP_STAGE_DECIDE   "decide"
#define SF_LOOP_STAGE_DONE     "done"

/* The champion before any promotion: the rollout evaluator. */
#define SF_LOOP_ROLLOUT "rollout"

/* The trainer's result line (`python3 -m spirefleet.train`: its last line
 * of stdout, a JSON object), the keys the loop and its report read. */
#define SF_TRAIN_RESULT_CHECKPOINT    "checkpoint"
#define SF_TRAIN_RESULT_VAL           "val" /* {head: loss} on held-out games */
#define SF_TRAIN_RESULT_BASELINE      "baseline"
#define SF_TRAIN_RESULT_LABELS        "labels"
#define SF_TRAIN_RESULT_TRAIN_RECORDS "train_records"
#define SF_TRAIN_RESULT_VAL_SEEDS     "val_seeds"
/* The exporter's result line (`python3 -m spirefleet.export`). */
#define SF_EXPORT_RESULT_SHA256 "sha256"

#endif
