/*
 * bench_items.c — what each relic and potion does to random fights.
 *
 * For every item of the Ironclad Act-1 pools that the engine models
 * (sf_run_relic_engine() / sf_run_potion_engine() >= 0; Burning Blood, the
 * starter relic, is part of every fight), N fights of uniformly random legal
 * actions from the A0 start (5 Strike, 4 Defend, Bash, Burning Blood, 80/80
 * HP), cycling the 20 Act-1 encounters, with
 *   - a relic: that relic beside Burning Blood (its run counter at the value
 *     of a fresh pick-up, item_counter() below);
 *   - a potion: that potion in slot 0, drunk whenever the random policy
 *     picks it (it is one of the legal actions like any card play);
 *   - the baseline: no item.
 * Fight f of every item has the same fight seed and the same action-stream
 * seed (common random numbers), so item-minus-baseline differences are less
 * noisy than two independent samples would be.
 *
 * Output: one JSON line per item,
 *   {"bench":"items","engine":"spirefleet","item":"Vajra","kind":"relic",
 *    "fights":N,"wins":W,"decisions_mean":..,"decisions_sd":..,
 *    "hp_left_mean_won":..,"hp_left_sd_won":..,"turns_mean":..,
 *    "paired_win":[mean,sd],"paired_decisions":[mean,sd],
 *    "paired_hp_end":[mean,sd]}
 * ("kind" is "baseline" for the baseline). The paired_* fields are the mean
 * and standard deviation over fights of (item - baseline) in the fight of
 * the same index: the win (0 or 1), the decisions, and the HP at the end
 * (0 when lost); they measure the item's effect with the fights' common
 * randomness taken out (all 0 for the baseline). tests/bench/reference/ compares
 * these lines with the same statistics from sts_lightspeed
 * (docs/benchmarks.md "Items against the reference engine").
 *
 * Options: --fights N (per item, default 2000), --seed S (default 1),
 * --item NAME (the baseline and that item only; "baseline" for the baseline
 * alone), --encounter NAME (every fight against that encounter, to look
 * into a difference). Deterministic for a seed; nothing is allocated per fight (the
 * baseline's fights are kept in one array of --fights records).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/common.h"
#include "engine/engine.h"

enum { KIND_BASELINE = 0, KIND_RELIC = 1, KIND_POTION = 2 };
static const char *const kind_name[] = {"baseline", "relic", "potion"};

typedef struct stats {
    long fights, wins;
    double dec_sum, dec_sq; /* decisions (applied actions) per fight      */
    double hp_sum, hp_sq;   /* HP left, won fights only                   */
    double turn_sum;        /* player turns started per fight             */
    /* Paired with the baseline's fight of the same index: sums and squares
     * of (item - baseline) for the win (0/1), the decisions and the HP at
     * the end (0 when lost). */
    double pw_sum, pw_sq, pd_sum, pd_sq, ph_sum, ph_sq;
} stats;

/* One baseline fight, for the paired differences. */
typedef struct fight_rec {
    int won, decisions, hp_end;
} fight_rec;

static void add_pair(double *sum, double *sq, double d) {
    *sum += d;
    *sq += d * d;
}

/* The run counter of a freshly picked-up relic: 0 (Pen Nib's Attacks, Happy
 * Flower's turns, ...), except the Bottled relics, whose counter names the
 * bottled card (deck index + 1): the player bottles Bash (Bottled Flame) or
 * the first Defend (Bottled Lightning), the only Attack and Skill of the
 * starter deck besides Strikes; the starter deck has no Power for Bottled
 * Tornado. The reference driver makes the same picks. */
static int item_counter(const sf_fight_spec *spec, const char *name) {
    const char *card = !strcmp(name, "Bottled Flame")       ? "Bash"
                       : !strcmp(name, "Bottled Lightning") ? "Defend"
                                                            : NULL;
    if (!card)
        return 0;
    int id = sf_card_lookup(card);
    for (int i = 0; i < spec->deck_n; i++)
        if (spec->deck[i].id == id)
            return i + 1;
    return 0;
}

/* Play `fights` random fights from `base` with the item applied; adds to
 * *st. With `record` the fights are the baseline's and are written there;
 * otherwise they are paired with `paired` (the baseline's). */
static int run_item(const sf_fight_spec *base, uint64_t seed, int fights, int encounter, stats *st,
                    fight_rec *record, const fight_rec *paired) {
    int n_enc = sf_encounter_count();
    for (int f = 0; f < fights; f++) {
        sf_fight_spec spec = *base;
        spec.encounter = encounter >= 0 ? encounter : f % n_enc;
        spec.seed = sf_seed_derive(seed, (uint64_t)f, 0, 0);
        uint64_t r = sf_seed_derive(seed, (uint64_t)f, 1, 0) | 1;
        sf_state s;
        sf_err err;
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "bench-items: fight %d refused: %s\n", f, err.msg);
            return -1;
        }
        long decisions = 0;
        while (!sf_engine_is_terminal(&s)) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            if (n <= 0 || sf_engine_apply(&s, acts[xorshift(&r) % (uint64_t)n], NULL) < 0) {
                fprintf(stderr, "bench-items: the engine refused an action in fight %d\n", f);
                return -1;
            }
            decisions++;
        }
        sf_outcome o;
        sf_engine_outcome(&s, &o);
        st->fights++;
        st->dec_sum += (double)decisions;
        st->dec_sq += (double)decisions * (double)decisions;
        st->turn_sum += o.turns;
        if (o.won) {
            st->wins++;
            st->hp_sum += o.hp;
            st->hp_sq += (double)o.hp * o.hp;
        }
        fight_rec me = {o.won, (int)decisions, o.won ? o.hp : 0};
        if (record)
            record[f] = me;
        const fight_rec *b = record ? &me : &paired[f];
        add_pair(&st->pw_sum, &st->pw_sq, me.won - b->won);
        add_pair(&st->pd_sum, &st->pd_sq, me.decisions - b->decisions);
        add_pair(&st->ph_sum, &st->ph_sq, me.hp_end - b->hp_end);
    }
    return 0;
}

static double sd_of(double sum, double sq, long n) {
    if (n < 2)
        return 0.0;
    double var = (sq - sum * sum / (double)n) / (double)(n - 1);
    return var > 0.0 ? sqrt(var) : 0.0;
}

static void print_line(const char *item, int kind, const stats *st) {
    long n = st->fights, w = st->wins;
    printf("{\"bench\":\"items\",\"engine\":\"spirefleet\",\"item\":\"%s\",\"kind\":\"%s\","
           "\"fights\":%ld,\"wins\":%ld,\"decisions_mean\":%.4f,\"decisions_sd\":%.4f,"
           "\"hp_left_mean_won\":%.4f,\"hp_left_sd_won\":%.4f,\"turns_mean\":%.4f,"
           "\"paired_win\":[%.5f,%.5f],\"paired_decisions\":[%.4f,%.4f],"
           "\"paired_hp_end\":[%.4f,%.4f]}\n",
           item, kind_name[kind], n, w, n ? st->dec_sum / (double)n : 0.0,
           sd_of(st->dec_sum, st->dec_sq, n), w ? st->hp_sum / (double)w : 0.0,
           sd_of(st->hp_sum, st->hp_sq, w), n ? st->turn_sum / (double)n : 0.0,
           n ? st->pw_sum / (double)n : 0.0, sd_of(st->pw_sum, st->pw_sq, n),
           n ? st->pd_sum / (double)n : 0.0, sd_of(st->pd_sum, st->pd_sq, n),
           n ? st->ph_sum / (double)n : 0.0, sd_of(st->ph_sum, st->ph_sq, n));
    fflush(stdout);
}

static int bench_one(const char *item, int kind, int engine_id, uint64_t seed, int fights,
                     int encounter, fight_rec *base_fights) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    if (kind == KIND_RELIC) {
        if (spec.relics_n >= SF_MAX_RELICS)
            return -1;
        spec.relic_counters[spec.relics_n] = item_counter(&spec, item);
        spec.relics[spec.relics_n++] = (uint8_t)engine_id;
    } else if (kind == KIND_POTION) {
        spec.potions[0] = (uint8_t)engine_id;
    }
    stats st = {0};
    fight_rec *record = kind == KIND_BASELINE ? base_fights : NULL;
    if (run_item(&spec, seed, fights, encounter, &st, record, base_fights) < 0)
        return -1;
    print_line(item, kind, &st);
    return 0;
}

int main(int argc, char **argv) {
    int fights = 2000;
    uint64_t seed = 1;
    const char *only = NULL;
    int encounter = -1; /* -1: cycle the 20 encounters */
    for (int i = 1; i < argc; i++) {
        char *end = NULL;
        if (!strcmp(argv[i], "--fights") && i + 1 < argc) {
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000000) {
                fprintf(stderr, "bench-items: --fights wants 1..100000000, not %s\n", argv[i]);
                return 2;
            }
            fights = (int)v;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = strtoull(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "bench-items: --seed wants an integer, not %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--item") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--encounter") && i + 1 < argc) {
            encounter = sf_encounter_lookup(argv[++i]);
            if (encounter < 0) {
                fprintf(stderr, "bench-items: no encounter named %s\n", argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench-items [--fights N] [--seed S] [--item NAME] "
                            "[--encounter NAME]\n");
            return 2;
        }
    }
    int starter = sf_relic_lookup("Burning Blood");
    int found = only == NULL || !strcmp(only, "baseline");
    fight_rec *base_fights = malloc(sizeof *base_fights * (size_t)fights);
    if (!base_fights) {
        fprintf(stderr, "bench-items: out of memory for %d fights\n", fights);
        return 1;
    }
    int rc = bench_one("baseline", KIND_BASELINE, 0, seed, fights, encounter, base_fights);
    for (int i = 1; i < sf_run_relic_count(); i++) {
        const char *name = sf_run_relic_name(i);
        int id = sf_run_relic_engine(i);
        if (rc < 0 || id < 0 || id == starter || (only && strcmp(only, name)))
            continue;
        found = 1;
        rc = bench_one(name, KIND_RELIC, id, seed, fights, encounter, base_fights);
    }
    /* the relics a start never holds (shop, events, Neow: engine relics with
     * no run relic of their name), fresh: Neow's Lament's 3 fights ahead */
    for (int id = 1; id < sf_relic_count(); id++) {
        const char *name = sf_relic_name(id);
        if (rc < 0 || sf_run_relic_lookup(name) >= 0 || (only && strcmp(only, name)))
            continue;
        found = 1;
        rc = bench_one(name, KIND_RELIC, id, seed, fights, encounter, base_fights);
    }
    for (int i = 1; i < sf_run_potion_count(); i++) {
        const char *name = sf_run_potion_name(i);
        int id = sf_run_potion_engine(i);
        if (rc < 0 || id < 0 || (only && strcmp(only, name)))
            continue;
        found = 1;
        rc = bench_one(name, KIND_POTION, id, seed, fights, encounter, base_fights);
    }
    free(base_fights);
    if (rc < 0)
        return 1;
    if (!found) {
        fprintf(stderr, "bench-items: %s is not an item the engine models\n", only);
        return 2;
    }
    return 0;
}
