/* label.c — the label contract's arithmetic (label.h). */
#include <math.h>
#include <stddef.h>

#include "label/label.h"

static int clampi(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

double sf_value_win_score(int hp, int max_hp, int potions_left, int turns) {
    double frac = max_hp > 0 ? (double)clampi(hp, 0, max_hp) / (double)max_hp : 0.0;
    int p = clampi(potions_left, 0, SF_VALUE_POTION_SLOTS);
    double margin = 0.45 * frac + 0.05 * (double)p / (double)SF_VALUE_POTION_SLOTS;
    /* keep(turns) by repeated multiplication: the same bytes on every
     * build (pow() may round differently between libms). */
    double keep = 1.0;
    for (int t = 1; t < turns; t++)
        keep *= t < SF_VALUE_TURN_LATE ? SF_VALUE_TURN_KEEP : SF_VALUE_TURN_KEEP_LATE;
    return SF_VALUE_WIN_MIN + keep * margin;
}

double sf_value_loss_score(int turns, int monster_hp_left, int monster_hp_pool) {
    double removed = 0.0;
    if (monster_hp_pool > 0)
        removed =
            1.0 - (double)clampi(monster_hp_left, 0, monster_hp_pool) / (double)monster_hp_pool;
    double t = (double)(turns > 0 ? turns : 0);
    double survived = t / (t + 10.0);
    return SF_VALUE_LOSS_MAX * (0.75 * removed + 0.25 * survived);
}

double sf_value_score(const sf_fight_facts *f) {
    if (f->won && f->escaped)
        return SF_VALUE_WIN_MIN;
    if (f->won)
        return sf_value_win_score(f->hp, f->max_hp, f->potions_left, f->turns);
    return sf_value_loss_score(f->turns, f->monster_hp_left, f->monster_hp_pool);
}

double sf_value_support(int i) {
    if (i < 0 || i >= SF_VALUE_BINS)
        return 0.0;
    if (i < SF_VALUE_LOSS_BINS)
        return SF_VALUE_LOSS_MAX * (double)i / (double)(SF_VALUE_LOSS_BINS - 1);
    return SF_VALUE_WIN_MIN + (1.0 - SF_VALUE_WIN_MIN) * (double)(i - SF_VALUE_LOSS_BINS) /
                                  (double)(SF_VALUE_BINS - 1 - SF_VALUE_LOSS_BINS);
}

void sf_value_project(double y, float p[SF_VALUE_BINS]) {
    for (int i = 0; i < SF_VALUE_BINS; i++)
        p[i] = 0.0f;
    if (!(y > 0.0)) { /* also NaN */
        p[0] = 1.0f;
        return;
    }
    if (y >= 1.0) {
        p[SF_VALUE_BINS - 1] = 1.0f;
        return;
    }
    /* The two supports around y: z_l <= y < z_{l+1}. */
    int l = 0;
    while (l + 2 < SF_VALUE_BINS && sf_value_support(l + 1) <= y)
        l++;
    double lo = sf_value_support(l), hi = sf_value_support(l + 1);
    double w = (y - lo) / (hi - lo); /* mass on l+1 */
    if (w < 1e-9)
        w = 0.0;
    else if (w > 1.0 - 1e-9)
        w = 1.0;
    p[l] = (float)(1.0 - w);
    p[l + 1] = (float)w;
}

double sf_value_mean(const float p[SF_VALUE_BINS]) {
    double m = 0.0;
    for (int i = 1; i < SF_VALUE_BINS; i++)
        m += (double)p[i] * sf_value_support(i);
    return m;
}

const char *sf_label_schema_note(unsigned version) {
    if (version == 3)
        return "schema 3 labels came from an engine in which most relics and potions did "
               "nothing (engine version 5 and earlier), and held potions_left at most 3: "
               "regenerate these labels with this build";
    if (version == 2)
        return "schema 2 scored a win without the per-turn discount of its margin and had no "
               "turn-limit outcome (a fight could run forever): regenerate these labels with "
               "this build";
    if (version == 1)
        return "schema 1 scored every loss 0 (no loss grading), used the earlier 21-bin layout "
               "(bin 0 death, bins 1..20 wins) and a block forecast that was always 0: "
               "regenerate these labels with this build";
    if (version > SF_LABEL_SCHEMA_VERSION)
        return "written by a newer spirefleet: read it with that release";
    return "not a schema spirefleet ever wrote";
}

/* Each column's name once; the table and the list are made from these. */
#define NAME_PLAYER_HP        "player_hp"
#define NAME_BLOCK_ENEMY_TURN "block_at_enemy_turn"
#define NAME_INCOMING_DAMAGE  "incoming_damage"
#define NAME_MONSTER_HP_TOTAL "monster_hp_total"
#define NAME_MONSTERS_ALIVE   "monsters_alive"

static const char *const forecast_names[SF_FORECAST_COLS] = {
    [SF_FORECAST_PLAYER_HP] = NAME_PLAYER_HP,
    [SF_FORECAST_BLOCK_AT_ENEMY_TURN] = NAME_BLOCK_ENEMY_TURN,
    [SF_FORECAST_INCOMING_DAMAGE] = NAME_INCOMING_DAMAGE,
    [SF_FORECAST_MONSTER_HP_TOTAL] = NAME_MONSTER_HP_TOTAL,
    [SF_FORECAST_MONSTERS_ALIVE] = NAME_MONSTERS_ALIVE,
};

const char *sf_forecast_column_name(int col) {
    return col >= 0 && col < SF_FORECAST_COLS ? forecast_names[col] : NULL;
}

const char *sf_forecast_column_list(void) {
    _Static_assert(SF_FORECAST_COLS == 5, "the list names every column in order");
    return NAME_PLAYER_HP "," NAME_BLOCK_ENEMY_TURN "," NAME_INCOMING_DAMAGE
                          "," NAME_MONSTER_HP_TOTAL "," NAME_MONSTERS_ALIVE;
}
