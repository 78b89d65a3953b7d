/*
 * monsters.c — every Act-1 monster: HP, moves, move-selection rules, special
 * powers (Curl Up, Spore Cloud, Enrage, Angry, Split, Sharp Hide / Mode
 * Shift, Artifact, Metallicize, Ritual, Entangle), the Looter's escape, the
 * Gremlin Wizard's charge cycle, and the Act-1 encounter builders.
 *
 * Source: game-rules §5 (monsters/exordium/<Class>.java) and §6
 * (MonsterHelper encounter composition). Conventions from the sheet:
 *   num        = aiRng.random(99), rolled by every rollMove()
 *   last(X)    = the most recently set move was X   -> mo->move == X
 *   lastTwo(X) = the last two set moves were X      -> move == X && hist[0] == X
 * A move is "set" at roll time or by a scripted setMove in takeTurn; both go
 * through monster_set_move(), which shifts the history.
 *
 * Moves are data, as cards are in cards.c: a row of sf_moves holds a move's
 * intent, its numbers with their ascension values, the move takeTurn sets
 * next, and a small effect function (t_*) for its takeTurn case;
 * sf_move_variants holds the numbers of a shared move that differ by
 * monster. The intent the player sees (monster_intent_damage) and the effect
 * read the same row, through monster_move().
 *
 * Per-monster scratch (sf_monster.ai[] / val[]):
 *   Louse          val[0] = bite damage D, ai[0] = D shown by an intent,
 *                  ai[1] = Curl Up triggered
 *   Acid/Spike L,
 *   Slime Boss     (split state in flags: MF_SPLIT_DONE)
 *   Looter         ai[0] = Mugs+Lunges done, val[0] = gold stolen
 *   Gremlin Wizard ai[0] = charge counter
 *   Red Slaver     ai[0] = Entangle used
 *   Gremlin Nob    ai[0] = Bellow used
 *   Lagavulin      ai[0] = sleep turns, ai[1] = attacks since Siphon, ai[2] = awake
 *   Sentry         ai[0] = first move done
 *   Guardian       val[0] = Mode Shift threshold, val[1] = damage taken,
 *                  ai[3] = Defensive Mode change triggered (closeUpTriggered)
 *   Hexaghost      ai[0] = activated, ai[1] = orb count, ai[2] = Burns upgraded,
 *                  val[0] = Divider damage per hit
 *   Cultist, Jaw Worm, Red Slaver: ai[1] = first move done
 */
#include "engine/internal.h"

/* ---- static data -------------------------------------------------------- */

/* name, kind, HP A0, HP raised, and the moves its rollMove and takeTurn can
 * set (the state loader refuses any other: a hand-edited Cultist announcing
 * Slam is not a position of the game). */
#define MV(x) (1ull << MV_##x)
const monster_def sf_monsters[MON_COUNT] = {
    [MON_NONE] = {"(none)", MK_NORMAL, 0, 0, 0, 0, 0},
    [MON_CULTIST] = {"Cultist", MK_NORMAL, 48, 54, 50, 56, MV(INCANTATION) | MV(DARK_STRIKE)},
    [MON_JAW_WORM] = {"Jaw Worm", MK_NORMAL, 40, 44, 42, 46, MV(CHOMP) | MV(THRASH) | MV(BELLOW)},
    [MON_RED_LOUSE] = {"Red Louse", MK_NORMAL, 10, 15, 11, 16, MV(LOUSE_BITE) | MV(LOUSE_GROW)},
    [MON_GREEN_LOUSE] = {"Green Louse", MK_NORMAL, 11, 17, 12, 18, MV(LOUSE_BITE) | MV(SPIT_WEB)},
    [MON_ACID_SLIME_S] = {"Acid Slime (S)", MK_NORMAL, 8, 12, 9, 13,
                          MV(ACID_TACKLE) | MV(ACID_LICK)},
    [MON_ACID_SLIME_M] = {"Acid Slime (M)", MK_NORMAL, 28, 32, 29, 34,
                          MV(ACID_SPIT) | MV(ACID_TACKLE) | MV(ACID_LICK)},
    [MON_ACID_SLIME_L] = {"Acid Slime (L)", MK_NORMAL, 65, 69, 68, 72,
                          MV(ACID_SPIT) | MV(ACID_TACKLE) | MV(ACID_LICK) | MV(SPLIT)},
    [MON_SPIKE_SLIME_S] = {"Spike Slime (S)", MK_NORMAL, 10, 14, 11, 15, MV(SPIKE_TACKLE)},
    [MON_SPIKE_SLIME_M] = {"Spike Slime (M)", MK_NORMAL, 28, 32, 29, 34,
                           MV(FLAME_TACKLE) | MV(SPIKE_LICK)},
    [MON_SPIKE_SLIME_L] = {"Spike Slime (L)", MK_NORMAL, 64, 70, 67, 73,
                           MV(FLAME_TACKLE) | MV(SPIKE_LICK) | MV(SPLIT)},
    [MON_FUNGI_BEAST] = {"Fungi Beast", MK_NORMAL, 22, 28, 24, 28, MV(FUNGI_BITE) | MV(FUNGI_GROW)},
    [MON_LOOTER] = {"Looter", MK_NORMAL, 44, 48, 46, 50,
                    MV(MUG) | MV(LUNGE) | MV(SMOKE_BOMB) | MV(ESCAPE)},
    [MON_MAD_GREMLIN] = {"Mad Gremlin", MK_NORMAL, 20, 24, 21, 25, MV(SCRATCH)},
    [MON_SNEAKY_GREMLIN] = {"Sneaky Gremlin", MK_NORMAL, 10, 14, 11, 15, MV(PUNCTURE)},
    [MON_FAT_GREMLIN] = {"Fat Gremlin", MK_NORMAL, 13, 17, 14, 18, MV(SMASH)},
    [MON_SHIELD_GREMLIN] = {"Shield Gremlin", MK_NORMAL, 12, 15, 13, 17,
                            MV(PROTECT) | MV(SHIELD_BASH)},
    [MON_GREMLIN_WIZARD] = {"Gremlin Wizard", MK_NORMAL, 21, 25, 22, 26,
                            MV(CHARGING) | MV(ULTIMATE_BLAST)},
    [MON_BLUE_SLAVER] = {"Blue Slaver", MK_NORMAL, 46, 50, 48, 52, MV(STAB) | MV(RAKE)},
    [MON_RED_SLAVER] = {"Red Slaver", MK_NORMAL, 46, 50, 48, 52,
                        MV(STAB) | MV(SCRAPE) | MV(ENTANGLE)},
    [MON_GREMLIN_NOB] = {"Gremlin Nob", MK_ELITE, 82, 86, 85, 90,
                         MV(BELLOW_NOB) | MV(RUSH) | MV(SKULL_BASH)},
    [MON_LAGAVULIN] = {"Lagavulin", MK_ELITE, 109, 111, 112, 115,
                       MV(SLEEP) | MV(LAGA_STUN) | MV(LAGA_ATTACK) | MV(SIPHON_SOUL)},
    [MON_SENTRY] = {"Sentry", MK_ELITE, 38, 42, 39, 45, MV(BOLT) | MV(BEAM)},
    [MON_GUARDIAN] = {"The Guardian", MK_BOSS, 240, 240, 250, 250,
                      MV(CHARGING_UP) | MV(FIERCE_BASH) | MV(VENT_STEAM) | MV(WHIRLWIND) |
                          MV(CLOSE_UP) | MV(ROLL_ATTACK) | MV(TWIN_SLAM)},
    [MON_HEXAGHOST] = {"Hexaghost", MK_BOSS, 250, 250, 264, 264,
                       MV(ACTIVATE) | MV(DIVIDER) | MV(SEAR) | MV(HEX_TACKLE) | MV(HEX_INFLAME) |
                           MV(INFERNO)},
    [MON_SLIME_BOSS] = {"Slime Boss", MK_BOSS, 140, 140, 150, 150,
                        MV(GOOP_SPRAY) | MV(PREPARING) | MV(SLAM) | MV(BOSS_SPLIT)},
};
#undef MV

/* ---- ascension ---------------------------------------------------------- */

/* HP bumps: normal from A7, elite from A8, boss from A9. */
static int hp_asc(const sf_combat *c, int id) {
    int k = sf_monsters[id].kind;
    return c->ascension >= (k == MK_BOSS ? 9 : k == MK_ELITE ? 8 : 7);
}

/* ---- move history ------------------------------------------------------- */

/* A louse's bite damage D: one monsterHpRng.random(lo, hi) over the Bite
 * row's range (dmg..mag). */
static int16_t louse_bite_roll(sf_combat *c) {
    const move_def *d = &sf_moves[MV_LOUSE_BITE];
    return (int16_t)sf_rng_random_range(combat_rng(c, SF_STREAM_MONSTER_HP), MOVE_NUM(c, d, dmg),
                                        MOVE_NUM(c, d, mag));
}

void monster_set_move(sf_combat *c, int m, int mv) {
    sf_monster *mo = &c->mon[m];
    mo->hist[1] = mo->hist[0];
    mo->hist[0] = mo->move;
    mo->move = (uint8_t)mv;
    if (mv == MV_LOUSE_BITE && !mo->ai[0]) {
        /* A louse's bite damage D is hidden until its intent first shows
         * it. A belief root forgets an unseen D (val[0] = 0); it is then
         * drawn here, as a chance event, from the re-seeded stream. */
        mo->ai[0] = 1;
        if (mo->val[0] == 0)
            mo->val[0] = louse_bite_roll(c);
    }
}

static int last(const sf_monster *mo, int mv) {
    return mo->move == mv;
}
static int last_two(const sf_monster *mo, int mv) {
    return mo->move == mv && mo->hist[0] == mv;
}

static sf_rng *ai(sf_combat *c) {
    return combat_rng(c, SF_STREAM_AI);
}

/* ---- construction ------------------------------------------------------- */

void monster_init(sf_combat *c, int m, int id, int hp) {
    sf_monster *mo = &c->mon[m];
    memset(mo, 0, sizeof *mo);
    mo->id = (uint8_t)id;
    if (hp > 0) {
        mo->hp = mo->max_hp = (int16_t)hp;
    } else {
        const monster_def *d = &sf_monsters[id];
        int asc = hp_asc(c, id);
        int lo = asc ? d->hp_lo_asc : d->hp_lo, hi = asc ? d->hp_hi_asc : d->hp_hi;
        /* setHp(min, max): one monsterHpRng.random(min, max), even when fixed. */
        mo->hp = mo->max_hp =
            (int16_t)sf_rng_random_range(combat_rng(c, SF_STREAM_MONSTER_HP), lo, hi);
    }
    c->mon_hp_pool = (uint16_t)(c->mon_hp_pool + mo->hp);
    switch (id) {
    case MON_RED_LOUSE:
    case MON_GREEN_LOUSE:
        /* Bite damage D is rolled in the constructor, after the HP roll. */
        mo->val[0] = louse_bite_roll(c);
        break;
    case MON_GREMLIN_WIZARD: mo->ai[0] = 1; break;
    case MON_GUARDIAN: mo->val[0] = (int16_t)(c->ascension >= 9 ? 35 : 30); break;
    case MON_LAGAVULIN: mo->flags |= MF_ASLEEP; break;
    default: break;
    }
}

/* usePreBattleAction (game-rules §2.1 step 3), in list order. */
void monster_pre_battle(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    switch (mo->id) {
    case MON_RED_LOUSE:
    case MON_GREEN_LOUSE:
        mo->pw[PW_CURL_UP] =
            (int16_t)(c->ascension >= 7
                          ? sf_rng_random_range(combat_rng(c, SF_STREAM_MONSTER_HP), 4, 8)
                          : sf_rng_random_range(combat_rng(c, SF_STREAM_MONSTER_HP), 3, 7));
        break;
    case MON_LAGAVULIN:
        mo->block = 8;
        mo->pw[PW_METALLICIZE] = 8;
        break;
    case MON_SENTRY: mo->pw[PW_ARTIFACT] = 1; break;
    case MON_GUARDIAN: mo->pw[PW_MODE_SHIFT] = mo->val[0]; break;
    case MON_FUNGI_BEAST: mo->pw[PW_SPORE_CLOUD] = 2; break;
    case MON_MAD_GREMLIN: mo->pw[PW_ANGRY] = 1; break;
    default: break;
    }
}

/* ---- move selection: rollMove() = getMove(aiRng.random(99)) ------------ */

static void roll_jaw_worm(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (!mo->ai[1]) {
        mo->ai[1] = 1;
        mv = MV_CHOMP;
    } else if (num < 25) {
        if (last(mo, MV_CHOMP))
            mv = sf_rng_random_bool_p(ai(c), 0.5625f) ? MV_BELLOW : MV_THRASH;
        else
            mv = MV_CHOMP;
    } else if (num < 55) {
        if (last_two(mo, MV_THRASH))
            mv = sf_rng_random_bool_p(ai(c), 0.357f) ? MV_CHOMP : MV_BELLOW;
        else
            mv = MV_THRASH;
    } else {
        if (last(mo, MV_BELLOW))
            mv = sf_rng_random_bool_p(ai(c), 0.416f) ? MV_CHOMP : MV_THRASH;
        else
            mv = MV_BELLOW;
    }
    monster_set_move(c, m, mv);
}

static void roll_louse(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int buff = mo->id == MON_RED_LOUSE ? MV_LOUSE_GROW : MV_SPIT_WEB;
    int mv;
    if (num < 25)
        mv = last_two(mo, buff) ? MV_LOUSE_BITE : buff;
    else
        mv = last_two(mo, MV_LOUSE_BITE) ? buff : MV_LOUSE_BITE;
    monster_set_move(c, m, mv);
}

static void roll_acid_ml(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (num < 30) {
        if (last_two(mo, MV_ACID_SPIT))
            mv = sf_rng_random_bool(ai(c)) ? MV_ACID_TACKLE : MV_ACID_LICK;
        else
            mv = MV_ACID_SPIT;
    } else if (num < 70) {
        if (last(mo, MV_ACID_TACKLE))
            mv = sf_rng_random_bool_p(ai(c), 0.4f) ? MV_ACID_SPIT : MV_ACID_LICK;
        else
            mv = MV_ACID_TACKLE;
    } else {
        if (last_two(mo, MV_ACID_LICK))
            mv = sf_rng_random_bool_p(ai(c), 0.4f) ? MV_ACID_SPIT : MV_ACID_TACKLE;
        else
            mv = MV_ACID_LICK;
    }
    monster_set_move(c, m, mv);
}

static void roll_spike_ml(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (num < 30)
        mv = last_two(mo, MV_FLAME_TACKLE) ? MV_SPIKE_LICK : MV_FLAME_TACKLE;
    else
        mv = last_two(mo, MV_SPIKE_LICK) ? MV_FLAME_TACKLE : MV_SPIKE_LICK;
    monster_set_move(c, m, mv);
}

static void roll_fungi(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (num < 60)
        mv = last_two(mo, MV_FUNGI_BITE) ? MV_FUNGI_GROW : MV_FUNGI_BITE;
    else
        mv = last(mo, MV_FUNGI_GROW) ? MV_FUNGI_BITE : MV_FUNGI_GROW;
    monster_set_move(c, m, mv);
}

static void roll_blue_slaver(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (num >= 40 && !last_two(mo, MV_STAB))
        mv = MV_STAB;
    else if (!last_two(mo, MV_RAKE))
        mv = MV_RAKE;
    else
        mv = MV_STAB;
    monster_set_move(c, m, mv);
}

static void roll_red_slaver(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (!mo->ai[1]) {
        mo->ai[1] = 1;
        mv = MV_STAB;
    } else if (num >= 75 && !mo->ai[0]) {
        mv = MV_ENTANGLE;
    } else if (num >= 55 && mo->ai[0] && !last_two(mo, MV_STAB)) {
        mv = MV_STAB;
    } else if (!last_two(mo, MV_SCRAPE)) {
        mv = MV_SCRAPE;
    } else {
        mv = MV_STAB;
    }
    monster_set_move(c, m, mv);
}

static void roll_nob(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    int mv;
    if (!mo->ai[0]) {
        mo->ai[0] = 1;
        mv = MV_BELLOW_NOB;
    } else if (num < 33) {
        mv = MV_SKULL_BASH;
    } else {
        mv = last_two(mo, MV_RUSH) ? MV_SKULL_BASH : MV_RUSH;
    }
    monster_set_move(c, m, mv);
}

static void roll_lagavulin(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    (void)num;
    int mv;
    if (!mo->ai[2])
        mv = MV_SLEEP;
    else if (mo->ai[1] < 2)
        mv = last_two(mo, MV_LAGA_ATTACK) ? MV_SIPHON_SOUL : MV_LAGA_ATTACK;
    else
        mv = MV_SIPHON_SOUL;
    monster_set_move(c, m, mv);
}

static void roll_sentry(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    (void)num;
    int mv;
    if (!mo->ai[0]) {
        mo->ai[0] = 1;
        mv = m % 2 == 0 ? MV_BOLT : MV_BEAM;
    } else {
        mv = last(mo, MV_BEAM) ? MV_BOLT : MV_BEAM;
    }
    monster_set_move(c, m, mv);
}

static void roll_hexaghost(sf_combat *c, int m, int num) {
    sf_monster *mo = &c->mon[m];
    (void)num;
    static const uint8_t cycle[7] = {MV_SEAR,       MV_HEX_TACKLE, MV_SEAR,   MV_HEX_INFLAME,
                                     MV_HEX_TACKLE, MV_SEAR,       MV_INFERNO};
    if (!mo->ai[0]) {
        mo->ai[0] = 1;
        monster_set_move(c, m, MV_ACTIVATE);
        return;
    }
    monster_set_move(c, m, cycle[mo->ai[1] % 7]);
}

void monster_roll_move(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    int num = sf_rng_random(ai(c), 99);
    switch (mo->id) {
    case MON_CULTIST:
        if (!mo->ai[1]) {
            mo->ai[1] = 1;
            monster_set_move(c, m, MV_INCANTATION);
        } else {
            monster_set_move(c, m, MV_DARK_STRIKE);
        }
        break;
    case MON_JAW_WORM: roll_jaw_worm(c, m, num); break;
    case MON_RED_LOUSE:
    case MON_GREEN_LOUSE: roll_louse(c, m, num); break;
    case MON_ACID_SLIME_S:
        monster_set_move(c, m, sf_rng_random_bool(ai(c)) ? MV_ACID_TACKLE : MV_ACID_LICK);
        break;
    case MON_ACID_SLIME_M:
    case MON_ACID_SLIME_L: roll_acid_ml(c, m, num); break;
    case MON_SPIKE_SLIME_S: monster_set_move(c, m, MV_SPIKE_TACKLE); break;
    case MON_SPIKE_SLIME_M:
    case MON_SPIKE_SLIME_L: roll_spike_ml(c, m, num); break;
    case MON_FUNGI_BEAST: roll_fungi(c, m, num); break;
    case MON_LOOTER: monster_set_move(c, m, MV_MUG); break;
    case MON_MAD_GREMLIN: monster_set_move(c, m, MV_SCRATCH); break;
    case MON_SNEAKY_GREMLIN: monster_set_move(c, m, MV_PUNCTURE); break;
    case MON_FAT_GREMLIN: monster_set_move(c, m, MV_SMASH); break;
    case MON_SHIELD_GREMLIN: monster_set_move(c, m, MV_PROTECT); break;
    case MON_GREMLIN_WIZARD: monster_set_move(c, m, MV_CHARGING); break;
    case MON_BLUE_SLAVER: roll_blue_slaver(c, m, num); break;
    case MON_RED_SLAVER: roll_red_slaver(c, m, num); break;
    case MON_GREMLIN_NOB: roll_nob(c, m, num); break;
    case MON_LAGAVULIN: roll_lagavulin(c, m, num); break;
    case MON_SENTRY: roll_sentry(c, m, num); break;
    case MON_GUARDIAN: monster_set_move(c, m, MV_CHARGING_UP); break;
    case MON_HEXAGHOST: roll_hexaghost(c, m, num); break;
    case MON_SLIME_BOSS: monster_set_move(c, m, MV_GOOP_SPRAY); break;
    default: break;
    }
}

/* ---- taking a turn: shared pieces --------------------------------------- */

/* Base damage per hit of move row `d` for this monster, before Strength,
 * Weak and Vulnerable: the row's number, or the monster's val[0]. The
 * intent and the attack both read it. */
static int move_damage(const sf_combat *c, const sf_monster *mo, const move_def *d) {
    return d->flags & MD_DMG_VAL ? mo->val[0] : MOVE_NUM(c, d, dmg);
}

/* One attack hit on the player. Returns 0 once the attacker or the player
 * is dead (a monster's DamageAction is cancelled when its owner is dying). */
static int attack_player(sf_combat *c, int m, int base) {
    if (!combat_alive(c, m) || c->phase == PH_OVER)
        return 0;
    combat_damage_player(c, combat_monster_damage(c, m, base), DT_NORMAL, m);
    return combat_alive(c, m) && c->phase != PH_OVER;
}

/* The move's hits, one DamageAction each; modifiers apply per hit. */
static void attack(sf_combat *c, int m, const move_def *d) {
    int base = move_damage(c, &c->mon[m], d);
    for (int i = 0; i < d->hits; i++)
        if (!attack_player(c, m, base))
            return;
}

static void status_to_discard(sf_combat *c, int card, int upg, int n) {
    for (int i = 0; i < n; i++)
        combat_add_new(c, ZONE_DISCARD, combat_make_card(c, card, upg));
}

static void monster_block(sf_combat *c, int m, int amount) {
    sf_monster *mo = &c->mon[m];
    int b = mo->block + amount;
    mo->block = (int16_t)(b > 999 ? 999 : b);
}

/* Looter's theft: min(amount, gold) when the hit resolves, blocked or not. */
static void steal(sf_combat *c, int m, int amount) {
    int take = c->gold < amount ? c->gold : amount;
    c->gold = (int16_t)(c->gold - take);
    c->mon[m].val[0] = (int16_t)(c->mon[m].val[0] + take);
}

/* Split: the parent dies and two children take its current HP. Children go
 * left (before) and right (after) of the parent. Returns nothing; indices
 * beyond m shift by one. */
static void split(sf_combat *c, int m, int left_id, int right_id) {
    int hp = c->mon[m].hp;
    c->mon[m].hp = 0;
    c->mon[m].flags |= MF_DEAD;
    c->flags |= FL_MONSTER_DIED;
    combat_spawn_monster(c, m, left_id, hp); /* parent now at m+1 */
    combat_spawn_monster(c, m + 2, right_id, hp);
}

/* ---- move effects --------------------------------------------------------
 * One per takeTurn case (game-rules §5, monsters/exordium/<Class>.java), in
 * the order the game queues the case's actions. Numbers come from the row. */

static int t_nothing(sf_combat *c, int m, const move_def *d) {
    (void)c, (void)m, (void)d;
    return 1;
}

static int t_attack(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    return 1;
}

static int t_block(sf_combat *c, int m, const move_def *d) {
    monster_block(c, m, MOVE_NUM(c, d, blk));
    return 1;
}

/* The monster gains Strength (Louse Grow, Fungi Beast Grow). */
static int t_strength(sf_combat *c, int m, const move_def *d) {
    combat_power_monster(c, m, PW_STR, MOVE_NUM(c, d, mag));
    return 1;
}

static int t_weak(sf_combat *c, int m, const move_def *d) {
    (void)m;
    combat_power_player(c, PW_WEAK, MOVE_NUM(c, d, mag), 1);
    return 1;
}

static int t_frail(sf_combat *c, int m, const move_def *d) {
    (void)m;
    combat_power_player(c, PW_FRAIL, MOVE_NUM(c, d, mag), 1);
    return 1;
}

/* Vent Steam: Weak, then Vulnerable, both `mag`. */
static int t_weak_vuln(sf_combat *c, int m, const move_def *d) {
    (void)m;
    combat_power_player(c, PW_WEAK, MOVE_NUM(c, d, mag), 1);
    combat_power_player(c, PW_VULN, MOVE_NUM(c, d, mag), 1);
    return 1;
}

/* The hit, then Weak unless the fight ended (Smash, Rake). */
static int t_attack_weak(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    if (c->phase != PH_OVER)
        combat_power_player(c, PW_WEAK, MOVE_NUM(c, d, mag), 1);
    return 1;
}

/* The hit, then Vulnerable unless the fight ended (Scrape, Skull Bash). */
static int t_attack_vuln(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    if (c->phase != PH_OVER)
        combat_power_player(c, PW_VULN, MOVE_NUM(c, d, mag), 1);
    return 1;
}

/* `mag` Slimed into the discard pile (Goop Spray). */
static int t_slimed(sf_combat *c, int m, const move_def *d) {
    (void)m;
    status_to_discard(c, CARD_SLIMED, 0, MOVE_NUM(c, d, mag));
    return 1;
}

/* The hit, then `mag` Slimed (Corrosive Spit, Flame Tackle). */
static int t_attack_slimed(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    status_to_discard(c, CARD_SLIMED, 0, MOVE_NUM(c, d, mag));
    return 1;
}

/* Cultist: Ritual `mag`, which skips the first end of round. */
static int t_incantation(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->pw[PW_RITUAL] = (int16_t)(mo->pw[PW_RITUAL] + MOVE_NUM(c, d, mag));
    mo->just |= JA_RITUAL;
    return 1;
}

/* Jaw Worm: the hit, then block if it survived the thorns. */
static int t_thrash(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    if (combat_alive(c, m))
        monster_block(c, m, MOVE_NUM(c, d, blk));
    return 1;
}

/* Jaw Worm: Strength, then block. */
static int t_bellow(sf_combat *c, int m, const move_def *d) {
    combat_power_monster(c, m, PW_STR, MOVE_NUM(c, d, mag));
    monster_block(c, m, MOVE_NUM(c, d, blk));
    return 1;
}

/* AcidSlime_L: two Acid Slime (M); no RollMoveAction. */
static int t_split_acid(sf_combat *c, int m, const move_def *d) {
    (void)d;
    split(c, m, MON_ACID_SLIME_M, MON_ACID_SLIME_M);
    return 0;
}

/* SpikeSlime_L: two Spike Slime (M); it still queues a RollMoveAction after
 * dying: one extra aiRng call (game-rules §0). */
static int t_split_spike(sf_combat *c, int m, const move_def *d) {
    (void)d;
    split(c, m, MON_SPIKE_SLIME_M, MON_SPIKE_SLIME_M);
    (void)sf_rng_random(ai(c), 99);
    return 0;
}

/* SlimeBoss: a Spike Slime (L) left and an Acid Slime (L) right. */
static int t_boss_split(sf_combat *c, int m, const move_def *d) {
    (void)d;
    split(c, m, MON_SPIKE_SLIME_L, MON_ACID_SLIME_L);
    return 0;
}

/* Looter.takeTurn: the first Mug's 60% dialog check (aiRng), the theft and
 * the hit queued, then the next move: after the second Mug a 50% (aiRng)
 * Smoke Bomb or Lunge, else Mug again. */
static int t_mug(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    if (mo->ai[0] == 0)
        (void)sf_rng_random_bool_p(ai(c), 0.6f);
    mo->ai[0]++;
    if (mo->ai[0] == 2)
        monster_set_move(c, m, sf_rng_random_bool_p(ai(c), 0.5f) ? MV_SMOKE_BOMB : MV_LUNGE);
    else
        monster_set_move(c, m, MV_MUG);
    steal(c, m, MOVE_NUM(c, d, mag));
    attack(c, m, d);
    return 0;
}

static int t_lunge(sf_combat *c, int m, const move_def *d) {
    c->mon[m].ai[0]++;
    steal(c, m, MOVE_NUM(c, d, mag));
    attack(c, m, d);
    return 1;
}

static int t_smoke_bomb(sf_combat *c, int m, const move_def *d) {
    monster_block(c, m, MOVE_NUM(c, d, blk));
    c->mon[m].flags |= MF_ESCAPING;
    return 1;
}

static int t_escape(sf_combat *c, int m, const move_def *d) {
    (void)d;
    c->mon[m].flags |= MF_ESCAPED;
    combat_check_end(c);
    return 1;
}

/* GremlinTsundere: aliveCount is taken at once and the next move set (Protect
 * while another monster lives, else Shield Bash); GainBlockRandomMonsterAction
 * then picks a random other living monster whose intent is not Escape
 * (aiRng), itself if none. */
static int t_protect(sf_combat *c, int m, const move_def *d) {
    int cand[SF_MAX_MONSTERS], n = 0, alive = 0;
    for (int i = 0; i < c->n_mon; i++) {
        if (!combat_alive(c, i))
            continue;
        alive++;
        if (i != m && c->mon[i].move != MV_ESCAPE)
            cand[n++] = i;
    }
    monster_set_move(c, m, alive > 1 ? MV_PROTECT : MV_SHIELD_BASH);
    int who = n ? cand[sf_rng_random(ai(c), n - 1)] : m;
    monster_block(c, who, MOVE_NUM(c, d, blk));
    return 0;
}

/* GremlinWizard: one more charge; Ultimate Blast once the count reaches
 * `mag` (the count starts at 1). */
static int t_charging(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->ai[0]++;
    monster_set_move(c, m, mo->ai[0] >= MOVE_NUM(c, d, mag) ? MV_ULTIMATE_BLAST : MV_CHARGING);
    return 0;
}

static int t_ultimate_blast(sf_combat *c, int m, const move_def *d) {
    c->mon[m].ai[0] = 0;
    attack(c, m, d);
    return 1;
}

/* SlaverRed: Entangled, once per fight. */
static int t_entangle(sf_combat *c, int m, const move_def *d) {
    combat_power_player(c, PW_ENTANGLED, MOVE_NUM(c, d, mag), 1);
    c->mon[m].ai[0] = 1;
    return 1;
}

/* GremlinNob: Enrage `mag` (not a debuff, no Artifact check). */
static int t_enrage(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->pw[PW_ENRAGE] = (int16_t)(mo->pw[PW_ENRAGE] + MOVE_NUM(c, d, mag));
    return 1;
}

/* Lagavulin: a natural wake on sleep turn `mag` (Metallicize goes), with a
 * scripted Attack next. */
static int t_sleep(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->ai[0]++;
    if (mo->ai[0] < MOVE_NUM(c, d, mag))
        return 1;
    mo->flags &= (uint8_t)~MF_ASLEEP;
    mo->ai[2] = 1;
    mo->pw[PW_METALLICIZE] = 0;
    monster_set_move(c, m, MV_LAGA_ATTACK);
    return 0;
}

static int t_laga_attack(sf_combat *c, int m, const move_def *d) {
    c->mon[m].ai[1]++;
    attack(c, m, d);
    return 1;
}

/* Lagavulin: Dexterity, then Strength, both `mag` (< 0). */
static int t_siphon_soul(sf_combat *c, int m, const move_def *d) {
    c->mon[m].ai[1] = 0;
    combat_power_player(c, PW_DEX, MOVE_NUM(c, d, mag), 1);
    combat_power_player(c, PW_STR, MOVE_NUM(c, d, mag), 1);
    return 1;
}

/* Sentry: `mag` Dazed into the discard pile. */
static int t_bolt(sf_combat *c, int m, const move_def *d) {
    (void)m;
    status_to_discard(c, CARD_DAZED, 0, MOVE_NUM(c, d, mag));
    return 1;
}

static int t_close_up(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->pw[PW_SHARP_HIDE] = (int16_t)(mo->pw[PW_SHARP_HIDE] + MOVE_NUM(c, d, mag));
    return 1;
}

/* TheGuardian: changeState("Offensive Mode") runs first (isOpen again), the
 * two hits follow, then Sharp Hide goes, Mode Shift returns with the raised
 * threshold, the damage count resets and the block is lost. */
static int t_twin_slam(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    mo->flags &= (uint8_t)~MF_DEFENSIVE;
    mo->ai[3] = 0;
    attack(c, m, d);
    mo->pw[PW_SHARP_HIDE] = 0;
    mo->pw[PW_MODE_SHIFT] = mo->val[0];
    mo->val[1] = 0;
    mo->block = 0;
    return 1;
}

/* Hexaghost: Divider's damage per hit is the player's HP now / `mag` + 1. */
static int t_activate(sf_combat *c, int m, const move_def *d) {
    c->mon[m].val[0] = (int16_t)(c->hp / MOVE_NUM(c, d, mag) + 1);
    return 1;
}

static int t_divider(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    c->mon[m].ai[1] = 0;
    return 1;
}

/* Hexaghost: the hit, `mag` Burn (Burn+ after an Inferno), one orb more. */
static int t_sear(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    attack(c, m, d);
    status_to_discard(c, CARD_BURN, mo->ai[2] ? 1 : 0, MOVE_NUM(c, d, mag));
    mo->ai[1]++;
    return 1;
}

static int t_hex_tackle(sf_combat *c, int m, const move_def *d) {
    attack(c, m, d);
    c->mon[m].ai[1]++;
    return 1;
}

/* Hexaghost: block, then Strength `mag`. */
static int t_hex_inflame(sf_combat *c, int m, const move_def *d) {
    monster_block(c, m, MOVE_NUM(c, d, blk));
    combat_power_monster(c, m, PW_STR, MOVE_NUM(c, d, mag));
    c->mon[m].ai[1]++;
    return 1;
}

/* Hexaghost: the hits, then every Burn in draw and discard (not hand) is
 * upgraded and `mag` Burn+ are added; Sear makes Burn+ from now on. */
static int t_inferno(sf_combat *c, int m, const move_def *d) {
    sf_monster *mo = &c->mon[m];
    attack(c, m, d);
    for (int i = 0; i < c->draw_n; i++)
        if (c->draw[i].id == CARD_BURN)
            c->draw[i].upg = 1;
    for (int i = 0; i < c->discard_n; i++)
        if (c->discard[i].id == CARD_BURN)
            c->discard[i].upg = 1;
    status_to_discard(c, CARD_BURN, 1, MOVE_NUM(c, d, mag));
    mo->ai[2] = 1;
    mo->ai[1] = 0;
    return 1;
}

/* ---- the move table -------------------------------------------------------
 * name, intent, hits, dmg, dmg A, blk, blk A, mag, mag A, A (the level the
 * raised numbers apply from), flags, next, take. Every number is the game's
 * (game-rules §5 "X (Y)": Y from A). A move that several monsters share
 * carries the numbers of the owner its group comment names; the other
 * owners' are in sf_move_variants. */
/* clang-format off */
const move_def sf_moves[MV_COUNT] = {
    [MV_NONE] = {"(none)", INT_NONE, 0, -1, -1, 0, 0, 0, 0, 0, 0, MV_NONE, t_nothing},
    /* Cultist */
    [MV_INCANTATION] = {"Incantation", INT_BUFF, 0, -1, -1, 0, 0, 3, 4, 2, 0, MV_NONE, t_incantation},
    [MV_DARK_STRIKE] = {"Dark Strike", INT_ATTACK, 1, 6, 6, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    /* Jaw Worm */
    [MV_CHOMP] = {"Chomp", INT_ATTACK, 1, 11, 12, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    [MV_THRASH] = {"Thrash", INT_ATTACK_DEFEND, 1, 7, 7, 5, 5, 0, 0, 2, 0, MV_NONE, t_thrash},
    [MV_BELLOW] = {"Bellow", INT_DEFEND_BUFF, 0, -1, -1, 6, 6, 3, 4, 2, 0, MV_NONE, t_bellow},
    /* Louse: D = monsterHpRng.random(dmg, mag), rolled per louse */
    [MV_LOUSE_BITE] = {"Bite", INT_ATTACK, 1, 5, 6, 0, 0, 7, 8, 2, MD_DMG_VAL, MV_NONE, t_attack},
    [MV_LOUSE_GROW] = {"Grow", INT_BUFF, 0, -1, -1, 0, 0, 3, 3, 2, 0, MV_NONE, t_strength},
    [MV_SPIT_WEB] = {"Spit Web", INT_DEBUFF, 0, -1, -1, 0, 0, 2, 2, 2, 0, MV_NONE, t_weak},
    /* Slimes: Acid Slime (M), Spike Slime (M), Acid Slime (L)'s Split */
    [MV_ACID_SPIT] = {"Corrosive Spit", INT_ATTACK_DEBUFF, 1, 7, 8, 0, 0, 1, 1, 2, 0, MV_NONE, t_attack_slimed},
    [MV_ACID_TACKLE] = {"Tackle", INT_ATTACK, 1, 10, 12, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    [MV_ACID_LICK] = {"Lick", INT_DEBUFF, 0, -1, -1, 0, 0, 1, 1, 2, 0, MV_NONE, t_weak},
    [MV_SPIKE_TACKLE] = {"Tackle", INT_ATTACK, 1, 5, 6, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    [MV_FLAME_TACKLE] = {"Flame Tackle", INT_ATTACK_DEBUFF, 1, 8, 10, 0, 0, 1, 1, 2, 0, MV_NONE, t_attack_slimed},
    [MV_SPIKE_LICK] = {"Lick", INT_DEBUFF, 0, -1, -1, 0, 0, 1, 1, 2, 0, MV_NONE, t_frail},
    [MV_SPLIT] = {"Split", INT_UNKNOWN, 0, -1, -1, 0, 0, 0, 0, 2, 0, MV_NONE, t_split_acid},
    /* Fungi Beast */
    [MV_FUNGI_BITE] = {"Bite", INT_ATTACK, 1, 6, 6, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    [MV_FUNGI_GROW] = {"Grow", INT_BUFF, 0, -1, -1, 0, 0, 3, 4, 2, 0, MV_NONE, t_strength},
    /* Looter: mag = gold stolen */
    [MV_MUG] = {"Mug", INT_ATTACK, 1, 10, 11, 0, 0, 15, 15, 2, 0, MV_NONE, t_mug},
    [MV_LUNGE] = {"Lunge", INT_ATTACK, 1, 12, 14, 0, 0, 15, 15, 2, 0, MV_SMOKE_BOMB, t_lunge},
    [MV_SMOKE_BOMB] = {"Smoke Bomb", INT_DEFEND, 0, -1, -1, 6, 6, 0, 0, 2, 0, MV_ESCAPE, t_smoke_bomb},
    [MV_ESCAPE] = {"Escape", INT_ESCAPE, 0, -1, -1, 0, 0, 0, 0, 2, 0, MV_ESCAPE, t_escape},
    /* Gremlins */
    [MV_SCRATCH] = {"Scratch", INT_ATTACK, 1, 4, 5, 0, 0, 0, 0, 2, 0, MV_SCRATCH, t_attack},
    [MV_PUNCTURE] = {"Puncture", INT_ATTACK, 1, 9, 10, 0, 0, 0, 0, 2, 0, MV_PUNCTURE, t_attack},
    [MV_SMASH] = {"Smash", INT_ATTACK_DEBUFF, 1, 4, 5, 0, 0, 1, 1, 2, 0, MV_NONE, t_attack_weak},
    [MV_PROTECT] = {"Protect", INT_DEFEND, 0, -1, -1, 7, 8, 0, 0, 7, 0, MV_NONE, t_protect},
    [MV_SHIELD_BASH] = {"Shield Bash", INT_ATTACK, 1, 6, 8, 0, 0, 0, 0, 2, 0, MV_SHIELD_BASH, t_attack},
    [MV_CHARGING] = {"Charging", INT_UNKNOWN, 0, -1, -1, 0, 0, 3, 3, 2, 0, MV_NONE, t_charging},
    [MV_ULTIMATE_BLAST] = {"Ultimate Blast", INT_ATTACK, 1, 25, 30, 0, 0, 0, 0, 2, 0, MV_CHARGING, t_ultimate_blast},
    /* Slavers: Blue Slaver's Stab */
    [MV_STAB] = {"Stab", INT_ATTACK, 1, 12, 13, 0, 0, 0, 0, 2, 0, MV_NONE, t_attack},
    [MV_RAKE] = {"Rake", INT_ATTACK_DEBUFF, 1, 7, 8, 0, 0, 1, 1, 2, 0, MV_NONE, t_attack_weak},
    [MV_SCRAPE] = {"Scrape", INT_ATTACK_DEBUFF, 1, 8, 9, 0, 0, 1, 1, 2, 0, MV_NONE, t_attack_vuln},
    [MV_ENTANGLE] = {"Entangle", INT_STRONG_DEBUFF, 0, -1, -1, 0, 0, 1, 1, 2, 0, MV_NONE, t_entangle},
    /* Gremlin Nob */
    [MV_BELLOW_NOB] = {"Bellow", INT_BUFF, 0, -1, -1, 0, 0, 2, 2, 3, 0, MV_NONE, t_enrage},
    [MV_RUSH] = {"Rush", INT_ATTACK, 1, 14, 16, 0, 0, 0, 0, 3, 0, MV_NONE, t_attack},
    [MV_SKULL_BASH] = {"Skull Bash", INT_ATTACK_DEBUFF, 1, 6, 8, 0, 0, 2, 2, 3, 0, MV_NONE, t_attack_vuln},
    /* Lagavulin: mag = sleep turns; Siphon Soul's -2 is A18's */
    [MV_SLEEP] = {"Sleep", INT_SLEEP, 0, -1, -1, 0, 0, 3, 3, 3, 0, MV_NONE, t_sleep},
    [MV_LAGA_STUN] = {"Stunned", INT_STUN, 0, -1, -1, 0, 0, 0, 0, 3, 0, MV_NONE, t_nothing},
    [MV_LAGA_ATTACK] = {"Attack", INT_ATTACK, 1, 18, 20, 0, 0, 0, 0, 3, 0, MV_NONE, t_laga_attack},
    [MV_SIPHON_SOUL] = {"Siphon Soul", INT_STRONG_DEBUFF, 0, -1, -1, 0, 0, -1, -2, 18, 0, MV_NONE, t_siphon_soul},
    /* Sentry */
    [MV_BOLT] = {"Bolt", INT_DEBUFF, 0, -1, -1, 0, 0, 2, 2, 3, 0, MV_NONE, t_bolt},
    [MV_BEAM] = {"Beam", INT_ATTACK, 1, 9, 10, 0, 0, 0, 0, 3, 0, MV_NONE, t_attack},
    /* The Guardian */
    [MV_CHARGING_UP] = {"Charging Up", INT_DEFEND, 0, -1, -1, 9, 9, 0, 0, 4, 0, MV_FIERCE_BASH, t_block},
    [MV_FIERCE_BASH] = {"Fierce Bash", INT_ATTACK, 1, 32, 36, 0, 0, 0, 0, 4, 0, MV_VENT_STEAM, t_attack},
    [MV_VENT_STEAM] = {"Vent Steam", INT_STRONG_DEBUFF, 0, -1, -1, 0, 0, 2, 2, 4, 0, MV_WHIRLWIND, t_weak_vuln},
    [MV_WHIRLWIND] = {"Whirlwind", INT_ATTACK, 4, 5, 5, 0, 0, 0, 0, 4, 0, MV_CHARGING_UP, t_attack},
    [MV_CLOSE_UP] = {"Close Up", INT_BUFF, 0, -1, -1, 0, 0, 3, 3, 4, 0, MV_ROLL_ATTACK, t_close_up},
    [MV_ROLL_ATTACK] = {"Roll Attack", INT_ATTACK, 1, 9, 10, 0, 0, 0, 0, 4, 0, MV_TWIN_SLAM, t_attack},
    [MV_TWIN_SLAM] = {"Twin Slam", INT_ATTACK_BUFF, 2, 8, 8, 0, 0, 0, 0, 4, 0, MV_WHIRLWIND, t_twin_slam},
    /* Hexaghost: Divider's damage is computed at Activate (mag = divisor) */
    [MV_ACTIVATE] = {"Activate", INT_UNKNOWN, 0, -1, -1, 0, 0, 12, 12, 4, 0, MV_DIVIDER, t_activate},
    [MV_DIVIDER] = {"Divider", INT_ATTACK, 6, 0, 0, 0, 0, 0, 0, 4, MD_DMG_VAL, MV_NONE, t_divider},
    [MV_SEAR] = {"Sear", INT_ATTACK_DEBUFF, 1, 6, 6, 0, 0, 1, 1, 4, 0, MV_NONE, t_sear},
    [MV_HEX_TACKLE] = {"Tackle", INT_ATTACK, 2, 5, 6, 0, 0, 0, 0, 4, 0, MV_NONE, t_hex_tackle},
    [MV_HEX_INFLAME] = {"Inflame", INT_DEFEND_BUFF, 0, -1, -1, 12, 12, 2, 2, 4, 0, MV_NONE, t_hex_inflame},
    [MV_INFERNO] = {"Inferno", INT_ATTACK_DEBUFF, 6, 2, 3, 0, 0, 3, 3, 4, 0, MV_NONE, t_inferno},
    /* Slime Boss */
    [MV_GOOP_SPRAY] = {"Goop Spray", INT_STRONG_DEBUFF, 0, -1, -1, 0, 0, 3, 3, 4, 0, MV_PREPARING, t_slimed},
    [MV_PREPARING] = {"Preparing", INT_UNKNOWN, 0, -1, -1, 0, 0, 0, 0, 4, 0, MV_SLAM, t_nothing},
    [MV_SLAM] = {"Slam", INT_ATTACK, 1, 35, 38, 0, 0, 0, 0, 4, 0, MV_GOOP_SPRAY, t_attack},
    [MV_BOSS_SPLIT] = {"Split", INT_UNKNOWN, 0, -1, -1, 0, 0, 0, 0, 4, 0, MV_NONE, t_boss_split},
};

/* monster, move, dmg, dmg A, blk, blk A, mag, mag A, next, take. The Acid
 * Slime (S) alternates Tackle and Lick without rolling. */
const move_variant sf_move_variants[] = {
    {MON_ACID_SLIME_S, MV_ACID_TACKLE, 3, 4, 0, 0, 0, 0, MV_ACID_LICK, t_attack},
    {MON_ACID_SLIME_S, MV_ACID_LICK, -1, -1, 0, 0, 1, 1, MV_ACID_TACKLE, t_weak},
    {MON_ACID_SLIME_L, MV_ACID_SPIT, 11, 12, 0, 0, 2, 2, MV_NONE, t_attack_slimed},
    {MON_ACID_SLIME_L, MV_ACID_TACKLE, 16, 18, 0, 0, 0, 0, MV_NONE, t_attack},
    {MON_ACID_SLIME_L, MV_ACID_LICK, -1, -1, 0, 0, 2, 2, MV_NONE, t_weak},
    {MON_SPIKE_SLIME_L, MV_FLAME_TACKLE, 16, 18, 0, 0, 2, 2, MV_NONE, t_attack_slimed},
    {MON_SPIKE_SLIME_L, MV_SPIKE_LICK, -1, -1, 0, 0, 2, 2, MV_NONE, t_frail},
    {MON_SPIKE_SLIME_L, MV_SPLIT, -1, -1, 0, 0, 0, 0, MV_NONE, t_split_spike},
    {MON_RED_SLAVER, MV_STAB, 13, 14, 0, 0, 0, 0, MV_NONE, t_attack},
};
/* clang-format on */

const int sf_move_variant_n = (int)(sizeof sf_move_variants / sizeof sf_move_variants[0]);

move_def monster_move(int id, int mv) {
    move_def d = sf_moves[mv];
    for (int i = 0; i < sf_move_variant_n; i++) {
        const move_variant *v = &sf_move_variants[i];
        if (v->monster == id && v->move == mv) {
            d.dmg = v->dmg, d.dmg_asc = v->dmg_asc;
            d.blk = v->blk, d.blk_asc = v->blk_asc;
            d.mag = v->mag, d.mag_asc = v->mag_asc;
            d.next = v->next;
            d.take = v->take;
            break;
        }
    }
    return d;
}

int monster_intent_damage(const sf_combat *c, int m, int *hits) {
    const sf_monster *mo = &c->mon[m];
    move_def d = monster_move(mo->id, mo->move);
    if (d.hits == 0 || d.dmg < 0) {
        *hits = 0;
        return -1;
    }
    *hits = d.hits;
    return combat_monster_damage(c, m, move_damage(c, mo, &d));
}

/* TheGuardian.changeState("Defensive Mode"), queued when the damage taken in
 * Offensive Mode reaches the threshold: Mode Shift removed, 20 block, the
 * threshold rises by 10 and the intent becomes Close Up. */
void monster_guardian_defensive(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    mo->flags |= MF_DEFENSIVE;
    mo->pw[PW_MODE_SHIFT] = 0;
    monster_block(c, m, 20);
    mo->val[0] = (int16_t)(mo->val[0] + 10);
    monster_set_move(c, m, MV_CLOSE_UP);
}

/* takeTurn(): the move, in the order the game queues it. A scripted monster
 * (a row with `next`) sets its next intent synchronously inside takeTurn(),
 * before any of the move's actions resolve; we do the same, so a reaction
 * during the move (a split or a Mode Shift caused by the player's thorns)
 * overrides it as in the game. Every other move ends with a RollMoveAction,
 * unless its effect set the next move itself; it rolls even if the monster
 * died meanwhile (while the fight goes on) and even if a split was set
 * during the move, whose queued SetMoveAction then restores Split. */
void monster_take_turn(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    move_def d = monster_move(mo->id, mo->move);
    if (d.next != MV_NONE)
        monster_set_move(c, m, d.next);
    int rolls = d.take(c, m, &d);
    if (d.next != MV_NONE || !rolls || c->phase == PH_OVER)
        return;
    int was_split = mo->move == MV_SPLIT || mo->move == MV_BOSS_SPLIT;
    monster_roll_move(c, m);
    if (was_split)
        monster_set_move(c, m, MV_SPLIT);
}

/* ---- reactions to damage ------------------------------------------------ */

void monster_on_hp_loss(sf_combat *c, int m, int lost, int type) {
    sf_monster *mo = &c->mon[m];
    (void)type;
    switch (mo->id) {
    case MON_ACID_SLIME_L:
    case MON_SPIKE_SLIME_L:
    case MON_SLIME_BOSS:
        /* Split: HP <= maxHP/2 (float compare), not dying, once. */
        if (mo->hp > 0 && !(mo->flags & MF_SPLIT_DONE) &&
            (float)mo->hp <= (float)mo->max_hp / 2.0f) {
            mo->flags |= MF_SPLIT_DONE;
            monster_set_move(c, m, mo->id == MON_SLIME_BOSS ? MV_BOSS_SPLIT : MV_SPLIT);
        }
        break;
    case MON_LAGAVULIN:
        if ((mo->flags & MF_ASLEEP) && mo->hp > 0) {
            /* woken by losing HP: Metallicize removed, intent Stun */
            mo->flags &= (uint8_t)~MF_ASLEEP;
            mo->ai[2] = 1;
            mo->pw[PW_METALLICIZE] = 0;
            monster_set_move(c, m, MV_LAGA_STUN);
        }
        break;
    case MON_GUARDIAN:
        /* TheGuardian.damage: HP lost in Offensive Mode counts toward the
         * threshold (and lowers the Mode Shift power); reaching it resets
         * the count and queues the change to Defensive Mode. */
        if (!(mo->flags & MF_DEFENSIVE) && !mo->ai[3] && mo->hp > 0) {
            mo->val[1] = (int16_t)(mo->val[1] + lost);
            if (mo->pw[PW_MODE_SHIFT] > 0)
                mo->pw[PW_MODE_SHIFT] = (int16_t)(mo->pw[PW_MODE_SHIFT] - lost);
            if (mo->val[1] >= mo->val[0]) {
                mo->val[1] = 0;
                mo->ai[3] = 1;
                combat_defer(c, DQ_GUARDIAN, m);
            }
        }
        break;
    default: break;
    }
}

void monster_on_death(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    if (mo->pw[PW_SPORE_CLOUD] > 0 && combat_alive_count(c) > 0)
        combat_power_player(c, PW_VULN, mo->pw[PW_SPORE_CLOUD], 1);
    if (mo->id == MON_LOOTER) {
        c->gold = (int16_t)(c->gold + mo->val[0]); /* stolen gold comes back */
        mo->val[0] = 0;
    }
}

/* ---- encounters (MonsterHelper) ----------------------------------------- */

const encounter_def sf_encounters[ENC_COUNT] = {
    [ENC_CULTIST] = {"Cultist", SF_POOL_WEAK},
    [ENC_JAW_WORM] = {"Jaw Worm", SF_POOL_WEAK},
    [ENC_2_LOUSE] = {"2 Louse", SF_POOL_WEAK},
    [ENC_SMALL_SLIMES] = {"Small Slimes", SF_POOL_WEAK},
    [ENC_GREMLIN_GANG] = {"Gremlin Gang", SF_POOL_STRONG},
    [ENC_LOTS_OF_SLIMES] = {"Lots of Slimes", SF_POOL_STRONG},
    [ENC_RED_SLAVER] = {"Red Slaver", SF_POOL_STRONG},
    [ENC_EXORDIUM_THUGS] = {"Exordium Thugs", SF_POOL_STRONG},
    [ENC_EXORDIUM_WILDLIFE] = {"Exordium Wildlife", SF_POOL_STRONG},
    [ENC_BLUE_SLAVER] = {"Blue Slaver", SF_POOL_STRONG},
    [ENC_LOOTER] = {"Looter", SF_POOL_STRONG},
    [ENC_LARGE_SLIME] = {"Large Slime", SF_POOL_STRONG},
    [ENC_3_LOUSE] = {"3 Louse", SF_POOL_STRONG},
    [ENC_2_FUNGI_BEASTS] = {"2 Fungi Beasts", SF_POOL_STRONG},
    [ENC_GREMLIN_NOB] = {"Gremlin Nob", SF_POOL_ELITE},
    [ENC_LAGAVULIN] = {"Lagavulin", SF_POOL_ELITE},
    [ENC_3_SENTRIES] = {"3 Sentries", SF_POOL_ELITE},
    [ENC_GUARDIAN] = {"The Guardian", SF_POOL_BOSS},
    [ENC_HEXAGHOST] = {"Hexaghost", SF_POOL_BOSS},
    [ENC_SLIME_BOSS] = {"Slime Boss", SF_POOL_BOSS},
};

static sf_rng *misc(sf_combat *c) {
    return combat_rng(c, SF_STREAM_MISC);
}

static void add(sf_combat *c, int id) {
    monster_init(c, c->n_mon, id, 0);
    c->n_mon++;
}

/* getLouse: a miscRng coin picks the colour, then the constructor rolls. */
static void add_louse(sf_combat *c) {
    add(c, sf_rng_random_bool(misc(c)) ? MON_RED_LOUSE : MON_GREEN_LOUSE);
}

/* Thugs and Wildlife construct every candidate (consuming monsterHpRng) and
 * keep one picked with miscRng.random(0, n-1). */
static void add_pick(sf_combat *c, const int *ids, int n, int louse_first) {
    sf_monster cand[3];
    int slot = c->n_mon;
    for (int i = 0; i < n; i++) {
        int id = ids[i];
        if (i == 0 && louse_first)
            id = sf_rng_random_bool(misc(c)) ? MON_RED_LOUSE : MON_GREEN_LOUSE;
        else if (id == MON_RED_SLAVER)
            id = sf_rng_random_bool(misc(c)) ? MON_RED_SLAVER : MON_BLUE_SLAVER;
        monster_init(c, slot, id, 0);
        cand[i] = c->mon[slot];
    }
    c->mon[slot] = cand[sf_rng_random_range(misc(c), 0, n - 1)];
    c->n_mon++;
}

static void add_weak_wildlife(sf_combat *c) {
    static const int ids[3] = {MON_RED_LOUSE, MON_SPIKE_SLIME_M, MON_ACID_SLIME_M};
    add_pick(c, ids, 3, 1);
}

static void add_strong_humanoid(sf_combat *c) {
    static const int ids[3] = {MON_CULTIST, MON_RED_SLAVER, MON_LOOTER};
    add_pick(c, ids, 3, 0);
}

static void add_strong_wildlife(sf_combat *c) {
    static const int ids[2] = {MON_FUNGI_BEAST, MON_JAW_WORM};
    add_pick(c, ids, 2, 0);
}

/* Draw `k` members without replacement from `pool` (miscRng.random(size-1)). */
static void add_from_pool(sf_combat *c, const int *pool_in, int n, int k) {
    int pool[8];
    memcpy(pool, pool_in, sizeof(int) * (size_t)n);
    for (int i = 0; i < k; i++) {
        int idx = sf_rng_random(misc(c), n - 1);
        add(c, pool[idx]);
        for (int j = idx; j + 1 < n; j++)
            pool[j] = pool[j + 1];
        n--;
    }
}

void encounter_build(sf_combat *c, int encounter) {
    c->n_mon = 0;
    switch (encounter) {
    case ENC_CULTIST: add(c, MON_CULTIST); break;
    case ENC_JAW_WORM: add(c, MON_JAW_WORM); break;
    case ENC_2_LOUSE:
        add_louse(c);
        add_louse(c);
        break;
    case ENC_SMALL_SLIMES:
        if (sf_rng_random_bool(misc(c))) {
            add(c, MON_SPIKE_SLIME_S);
            add(c, MON_ACID_SLIME_M);
        } else {
            add(c, MON_ACID_SLIME_S);
            add(c, MON_SPIKE_SLIME_M);
        }
        break;
    case ENC_GREMLIN_GANG: {
        static const int pool[8] = {MON_MAD_GREMLIN,    MON_MAD_GREMLIN,   MON_SNEAKY_GREMLIN,
                                    MON_SNEAKY_GREMLIN, MON_FAT_GREMLIN,   MON_FAT_GREMLIN,
                                    MON_SHIELD_GREMLIN, MON_GREMLIN_WIZARD};
        add_from_pool(c, pool, 8, 4);
        break;
    }
    case ENC_LOTS_OF_SLIMES: {
        static const int pool[5] = {MON_SPIKE_SLIME_S, MON_SPIKE_SLIME_S, MON_SPIKE_SLIME_S,
                                    MON_ACID_SLIME_S, MON_ACID_SLIME_S};
        add_from_pool(c, pool, 5, 5);
        break;
    }
    case ENC_RED_SLAVER: add(c, MON_RED_SLAVER); break;
    case ENC_EXORDIUM_THUGS:
        add_weak_wildlife(c);
        add_strong_humanoid(c);
        break;
    case ENC_EXORDIUM_WILDLIFE:
        add_strong_wildlife(c);
        add_weak_wildlife(c);
        break;
    case ENC_BLUE_SLAVER: add(c, MON_BLUE_SLAVER); break;
    case ENC_LOOTER: add(c, MON_LOOTER); break;
    case ENC_LARGE_SLIME:
        add(c, sf_rng_random_bool(misc(c)) ? MON_ACID_SLIME_L : MON_SPIKE_SLIME_L);
        break;
    case ENC_3_LOUSE:
        add_louse(c);
        add_louse(c);
        add_louse(c);
        break;
    case ENC_2_FUNGI_BEASTS:
        add(c, MON_FUNGI_BEAST);
        add(c, MON_FUNGI_BEAST);
        break;
    case ENC_GREMLIN_NOB: add(c, MON_GREMLIN_NOB); break;
    case ENC_LAGAVULIN: add(c, MON_LAGAVULIN); break;
    case ENC_3_SENTRIES:
        add(c, MON_SENTRY);
        add(c, MON_SENTRY);
        add(c, MON_SENTRY);
        break;
    case ENC_GUARDIAN: add(c, MON_GUARDIAN); break;
    case ENC_HEXAGHOST: add(c, MON_HEXAGHOST); break;
    case ENC_SLIME_BOSS: add(c, MON_SLIME_BOSS); break;
    default: break;
    }
}
