/*
 * label_synth.h — realistic synthetic label records for shard tests,
 * benchmarks, fixtures and fuzz seeds, until the engine's tokenizer and the
 * search produce real ones.
 *
 * Shapes follow engine/engine.h's sf_feat (token_type u8 [T], token_cat u16
 * [T,4], token_cont f32 [T,16], query u16 [Q,2], query_cont f32 [Q,8],
 * action codes u32 [Q]); contents imitate a combat position: a CTX and a
 * player token, 1-5 monsters with intents, statuses, hand/draw/discard/
 * exhaust cards, relics and potions; continuous features are mostly small
 * integers (HP, block, costs, damage) and zeros, with some ratios. Search
 * results have visits summing to the simulations, completed-Q and a
 * normalised policy; outcomes use the label contract (label/label.h); forecasts are
 * masked past the fight's end. Everything is a pure function of
 * (params, index): the same index gives the same bytes.
 */
#ifndef SF_LABEL_SYNTH_H
#define SF_LABEL_SYNTH_H

#include <stdint.h>

#include "shard/shard.h"

#define SYNTH_MAX_T     128
#define SYNTH_MAX_Q     64
#define SYNTH_MAX_TREES 16

typedef struct synth_params {
    const char *run_id;
    uint64_t job_id;
    uint64_t seed_base; /* game_seed = seed_base + index / decisions_per_game */
    uint32_t engine_version;
    uint32_t tokenizer_version;
    const char *model_sha256;
    const char *config_digest;
    int teacher_every;      /* a teacher block on every k-th record; 0 = never */
    int dense;              /* 1: every continuous feature set (noisy floats):
                             * records over 2 KB compressed, the overflow-page
                             * case of docs/format.md "blocks"            */
    int engine_limit_every; /* fights with (game_seed*12 + fight_index) a
                               multiple of k end as engine-limit losses;
                               0 = none                                 */
    int turn_limit_every;   /* the same for turn-limit losses at turn 50
                               (an engine-limit end takes precedence)   */
} synth_params;

/* Defaults: run "synth-run", job 7, seed_base 1000, versions 1/1, model
 * "rollout", a fixed config digest, a teacher block on every 2nd record. */
void synth_params_default(synth_params *p);

/* The shard info matching `p` (worker "synth-worker", created_unix fixed). */
void synth_info(const synth_params *p, sf_shard_info *info);

/* One record with all its storage inside; fill it with synth_fill() and
 * use `rec`. Large (~20 KB): allocate it, or keep one in static storage. */
typedef struct synth_record {
    Spirefleet__LabelRecord rec;
    Spirefleet__LabelIds ids;
    Spirefleet__Inputs inputs;
    Spirefleet__SearchResult search;
    Spirefleet__Outcome outcome;
    Spirefleet__Forecast forecast;
    Spirefleet__TeacherForecast teacher;
    Spirefleet__Tensor t_type, t_cat, t_cont, t_query, t_qcont, t_action;
    Spirefleet__Tensor f_target, f_mask, th_mean, th_cov;
    uint32_t shapes[10][3];
    char encounter[32];
    uint8_t type[SYNTH_MAX_T];
    uint16_t cat[SYNTH_MAX_T * 4];
    float cont[SYNTH_MAX_T * 16];
    uint16_t query[SYNTH_MAX_Q * 2];
    float qcont[SYNTH_MAX_Q * 8];
    uint32_t action[SYNTH_MAX_Q];
    uint32_t visits[SYNTH_MAX_Q];
    float q[SYNTH_MAX_Q], cq[SYNTH_MAX_Q], policy[SYNTH_MAX_Q];
    float tree_values[SYNTH_MAX_TREES];
    float bins[SF_VALUE_BINS];
    float f_target_v[SF_FORECAST_H * SF_FORECAST_COLS];
    uint8_t f_mask_v[SF_FORECAST_H];
    float th_mean_v[SF_FORECAST_H * SF_FORECAST_COLS];
    float th_cov_v[SF_FORECAST_H];
} synth_record;

/* Fill `s` with record `index` of the synthetic job `p`. */
void synth_fill(synth_record *s, const synth_params *p, uint64_t index);

#endif
