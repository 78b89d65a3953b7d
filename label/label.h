/*
 * label.h — the label contract: what a label's value and forecast targets
 * mean, in one place. The search backs these values up, the worker writes
 * them into label records, the shard checker verifies them, the inference
 * server's value head is read through them, and the Python reader is
 * generated from them (label/gen_contract_py.c writes spirefleet/contract.py
 * at build time). docs/format.md and docs/search.md explain the design.
 *
 * The outcome score y in [0, 1]
 *   A fight the player escaped (Smoke Bomb: survived, no reward) scores
 *   exactly SF_VALUE_WIN_MIN, the floor of the win range: above every
 *   loss, below every win. Scored as a win at its HP, an escape would
 *   look better than fighting in almost every fight the bomb may leave,
 *   and the search would drink it at once; the game's price, the rewards
 *   given up, is not in this score, so the escape gets no margin and
 *   stays what players use it for, a way out of a fight that is lost.
 *   A won fight scores in [SF_VALUE_WIN_MIN, 1]:
 *       margin = 0.45 * hp / max_hp + 0.05 * potions_left / 3
 *       y = 0.5 + keep(turns) * margin
 *       keep(t) = 0.999^(min(t, 12) - 1) * 0.98^max(0, t - 12)
 *   so HP kept counts nine times as much as potions kept, and a shorter win
 *   scores higher: each turn after the first keeps 99.9 % of the win's
 *   margin over the win floor up to turn SF_VALUE_TURN_LATE (12, longer than
 *   98 % of fights the search plays), and 98 % per turn after it. Without
 *   it a search that is sure of a win at its current HP has no reason to
 *   end the fight, and stalls (its mean backup favours ending the turn by up
 *   to about 1 HP in such positions; docs/search.md "Finishing fights").
 *   The slow rate keeps fights of real length as the game scores them
 *   (measured: no HP lost against the undiscounted rule), the fast one ends
 *   a stall within a few turns of turn 12; every win stays in [0.5, 1].
 *   A lost fight scores in [0, SF_VALUE_LOSS_MAX), graded by how close it
 *   was from the player's side:
 *       removed  = 1 - monster_hp_left / monster_hp_pool
 *       survived = turns / (turns + 10)
 *       y = 0.2 * (0.75 * removed + 0.25 * survived)
 *   monster_hp_pool is the HP every monster entered the fight with, monsters
 *   spawned by splits included (a split child enters with its parent's HP),
 *   so a split neither adds nor removes progress; monster_hp_left is the HP
 *   of the monsters still fighting. removed < 1 for a loss (someone is left)
 *   and survived < 1, so every loss is strictly below 0.2, and every win is
 *   at least 0.5: any win outranks any loss by at least 0.3, whatever the
 *   HP, potions, turns or damage. A fight ended at the turn cap
 *   (engine.h, sf_outcome.turn_limit) is a loss and graded as one, with
 *   turns = the cap. Why these numbers: the loss range is kept
 *   small against the win range (0.2 against 0.5) so that a search trades
 *   winning chances for a better loss only at a poor rate (a 1-point win
 *   probability is worth at least 0.003, more than 1.5 % of the whole loss
 *   range); damage dealt weighs three times survival because it is the
 *   progress that turns a loss into a win, while survival (saturating, half
 *   credit at 10 turns) keeps a doomed position ranking its defences
 *   instead of going flat (a value that is 0 at every death teaches nothing
 *   and lets the search stop blocking).
 *
 * The 21-bin categorical
 *   Bins 0..4 are losses with supports z_i = 0.05 * i (0, 0.05, ..., 0.2);
 *   bins 5..20 are wins with supports z_i = 0.5 + (i - 5) / 30 (0.5 ... 1).
 *   A scalar is projected two-hot onto the two neighbouring supports with
 *   masses proportional to closeness (MuZero's two-hot value transform), so
 *   the histogram's mean is the scalar exactly: an outcome lands inside its
 *   own class, and an estimate between 0.2 and 0.5 (never an outcome) mixes
 *   bins 4 and 5.
 *
 * Forecast targets
 *   For h = 1..SF_FORECAST_H player turns ahead, SF_FORECAST_COLS columns
 *   observed at the first decision of turn t + h (SF_FORECAST_*).
 *
 * Invariants: every function here is pure (no allocation, no globals, no
 * engine calls) and gives the same bytes on every build.
 */
#ifndef SF_LABEL_H
#define SF_LABEL_H

/* LabelRecord.schema_version and ShardManifest.schema_version this build
 * writes and the only one it reads. 2: graded losses, the new 21-bin layout,
 * forecast column 1 = block at the enemy turn, both root values,
 * engine-limit outcomes. 3: a win's margin discounted per turn (keep(t)),
 * turn-limit outcomes. 4: labels of the engine that plays every Act-1 relic
 * and potion (engine version 6): potions_left up to SF_VALUE_POTIONS_MAX (5,
 * Potion Belt; the score still counts at most 3), and a won outcome may be
 * the player's escape (Smoke Bomb, sf_outcome.escaped). The score and the
 * bins are those of 3. */
#define SF_LABEL_SCHEMA_VERSION 4

/* Why a record of another schema version cannot be read, for the message
 * that refuses it: for a version this contract replaced, what changed (e.g.
 * "schema 1 scored every loss 0 and used the old 21-bin layout:
 * regenerate the labels"); for an unknown one, a note that it is newer than
 * this build. Never NULL; static storage. */
const char *sf_label_schema_note(unsigned version);

/* ---------------------------------------------------------------------------
 * The outcome score
 * ------------------------------------------------------------------------- */
#define SF_VALUE_BINS      21
#define SF_VALUE_LOSS_BINS 5   /* bins 0..4: losses                        */
#define SF_VALUE_LOSS_MAX  0.2 /* every loss scores below this             */
#define SF_VALUE_WIN_MIN   0.5 /* every win scores at least this           */
#define SF_VALUE_POTION_SLOTS                       \
    3 /* potions_left counts 0..3 in the score: the \
         game's default slots (the engine's         \
         SF_POTION_SLOTS)                         */
#define SF_VALUE_POTIONS_MAX                      \
    5 /* potions_left a record may hold: 5 with   \
         Potion Belt (SF_MAX_POTION_SLOTS); a 4th \
         and 5th potion add nothing to the score */
/* keep(t) above: a win's margin kept per turn after the first, up to turn
 * SF_VALUE_TURN_LATE and after it */
#define SF_VALUE_TURN_KEEP      0.999
#define SF_VALUE_TURN_KEEP_LATE 0.98
#define SF_VALUE_TURN_LATE      12

/* What a finished fight's score is computed from. Every count is clamped to
 * its range (hp to 0..max_hp, potions_left to 0..3 (SF_VALUE_POTION_SLOTS), monster_hp_left to
 * 0..monster_hp_pool, turns to >= 0); max_hp <= 0 counts as hp/max_hp = 0
 * and monster_hp_pool <= 0 as nothing removed. */
typedef struct sf_fight_facts {
    int won;             /* 1 when the player won (a turn-limit end is a loss) */
    int escaped;         /* 1: won by leaving the fight (Smoke Bomb): scores
                            SF_VALUE_WIN_MIN                            */
    int hp, max_hp;      /* player HP at the end                        */
    int potions_left;    /* filled potion slots at the end              */
    int turns;           /* player turns started                        */
    int monster_hp_left; /* HP of the monsters still fighting           */
    int monster_hp_pool; /* HP every monster entered the fight with     */
} sf_fight_facts;

/* The score of a won fight: 0.5 + keep(turns) * (0.45*hp/max_hp +
 * 0.05*potions_left/3), keep(t) = SF_VALUE_TURN_KEEP^(min(t, L) - 1) *
 * SF_VALUE_TURN_KEEP_LATE^max(0, t - L), L = SF_VALUE_TURN_LATE; in
 * [0.5, 1]; turns < 1 counts as 1. */
double sf_value_win_score(int hp, int max_hp, int potions_left, int turns);

/* The score of a lost fight: 0.2*(0.75*removed + 0.25*turns/(turns + 10)),
 * in [0, 0.2) (see the top of this header). */
double sf_value_loss_score(int turns, int monster_hp_left, int monster_hp_pool);

/* The outcome score y of `f`: the win score if f->won, else the loss
 * score. */
double sf_value_score(const sf_fight_facts *f);

/* The support z_i of bin i (0.05*i for i < 5, 0.5 + (i-5)/30 from 5; strictly
 * increasing). i out of range returns 0. */
double sf_value_support(int i);

/* Project y two-hot onto the supports: z_l <= y <= z_{l+1} gets masses
 * p[l] = (z_{l+1} - y)/(z_{l+1} - z_l), p[l+1] = 1 - p[l], so sum p = 1 and
 * sum p_i*z_i = y. A mass within 1e-9 of 0 or 1 is snapped (an outcome on
 * a support is one-hot). y is clamped to [0, 1]; NaN counts as 0. */
void sf_value_project(double y, float p[SF_VALUE_BINS]);

/* E[z] = sum_i p[i]*z_i of a 21-bin distribution (no normalisation). */
double sf_value_mean(const float p[SF_VALUE_BINS]);

/* ---------------------------------------------------------------------------
 * Forecast targets: f32 [SF_FORECAST_H, SF_FORECAST_COLS] per label, masked
 * per horizon where the fight ended sooner.
 * ------------------------------------------------------------------------- */
#define SF_FORECAST_H 4
enum {
    SF_FORECAST_PLAYER_HP = 0,           /* player HP at the start of turn t+h     */
    SF_FORECAST_BLOCK_AT_ENEMY_TURN = 1, /* block the player held when the monsters
                                            began the turn before t+h (after
                                            end-of-turn block, before their hits) */
    SF_FORECAST_INCOMING_DAMAGE = 2,     /* damage announced by intents then       */
    SF_FORECAST_MONSTER_HP_TOTAL = 3,    /* HP summed over living monsters then    */
    SF_FORECAST_MONSTERS_ALIVE = 4,      /* living monsters then                   */
    SF_FORECAST_COLS = 5
};

/* The column's name ("player_hp", "block_at_enemy_turn", ...), the key the
 * Python reader and the model bundles use; NULL out of range. */
const char *sf_forecast_column_name(int col);

/* Every column's name in column order, comma-separated (a model bundle's
 * "forecast_targets"). Static storage. */
const char *sf_forecast_column_list(void);

#endif
