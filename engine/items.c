/*
 * items.c — combat relics and potions (game-rules §7 and §8,
 * relics/<Name>.java and potions/<Name>.java, potencies without Sacred Bark).
 * Potions are ordinary actions: sf_engine_apply(SF_ACT_POTION).
 */
#include <math.h>

#include "engine/internal.h"

const relic_def sf_relics[RELIC_COUNT] = {
    [RELIC_NONE] = {"(none)"},
    [RELIC_BURNING_BLOOD] = {"Burning Blood"},
    [RELIC_ANCHOR] = {"Anchor"},
    [RELIC_BAG_OF_MARBLES] = {"Bag of Marbles"},
    [RELIC_VAJRA] = {"Vajra"},
    [RELIC_ODDLY_SMOOTH_STONE] = {"Oddly Smooth Stone"},
    [RELIC_LANTERN] = {"Lantern"},
    [RELIC_BLOOD_VIAL] = {"Blood Vial"},
    [RELIC_BRONZE_SCALES] = {"Bronze Scales"},
    [RELIC_AKABEKO] = {"Akabeko"},
    [RELIC_ORICHALCUM] = {"Orichalcum"},
    [RELIC_HAPPY_FLOWER] = {"Happy Flower", 3},
    [RELIC_PEN_NIB] = {"Pen Nib", 10},
    [RELIC_KUNAI] = {"Kunai"},
    [RELIC_SHURIKEN] = {"Shuriken"},
    [RELIC_ORNAMENTAL_FAN] = {"Ornamental Fan"},
    [RELIC_RED_SKULL] = {"Red Skull"},
    [RELIC_MEAT_ON_THE_BONE] = {"Meat on the Bone"},
    [RELIC_BOOT] = {"Boot"},
    [RELIC_BAG_OF_PREPARATION] = {"Bag of Preparation"},
    [RELIC_ANCIENT_TEA_SET] = {"Ancient Tea Set", 2},
    [RELIC_PRESERVED_INSECT] = {"Preserved Insect"},
    [RELIC_ART_OF_WAR] = {"Art of War"},
    [RELIC_CENTENNIAL_PUZZLE] = {"Centennial Puzzle"},
    [RELIC_NUNCHAKU] = {"Nunchaku", 10},
    [RELIC_TOY_ORNITHOPTER] = {"Toy Ornithopter"},
    [RELIC_BOTTLED_TORNADO] = {"Bottled Tornado", SF_MAX_DECK + 1},
    [RELIC_SUNDIAL] = {"Sundial", 3},
    [RELIC_BLUE_CANDLE] = {"Blue Candle"},
    [RELIC_STRIKE_DUMMY] = {"Strike Dummy"},
    [RELIC_INK_BOTTLE] = {"Ink Bottle", 10},
    [RELIC_BOTTLED_LIGHTNING] = {"Bottled Lightning", SF_MAX_DECK + 1},
    [RELIC_GREMLIN_HORN] = {"Gremlin Horn"},
    [RELIC_HORN_CLEAT] = {"Horn Cleat"},
    [RELIC_LETTER_OPENER] = {"Letter Opener"},
    [RELIC_BOTTLED_FLAME] = {"Bottled Flame", SF_MAX_DECK + 1},
    [RELIC_MUMMIFIED_HAND] = {"Mummified Hand"},
    [RELIC_PANTOGRAPH] = {"Pantograph"},
    [RELIC_MERCURY_HOURGLASS] = {"Mercury Hourglass"},
    [RELIC_SELF_FORMING_CLAY] = {"Self-Forming Clay"},
    [RELIC_PAPER_PHROG] = {"Paper Phrog"},
    [RELIC_GINGER] = {"Ginger"},
    [RELIC_BIRD_FACED_URN] = {"Bird-Faced Urn"},
    [RELIC_UNCEASING_TOP] = {"Unceasing Top"},
    [RELIC_TORII] = {"Torii"},
    [RELIC_STONE_CALENDAR] = {"Stone Calendar"},
    [RELIC_THREAD_AND_NEEDLE] = {"Thread and Needle"},
    [RELIC_TURNIP] = {"Turnip"},
    [RELIC_ICE_CREAM] = {"Ice Cream"},
    [RELIC_CALIPERS] = {"Calipers"},
    [RELIC_LIZARD_TAIL] = {"Lizard Tail", 2},
    [RELIC_GIRYA] = {"Girya", 4},
    [RELIC_DEAD_BRANCH] = {"Dead Branch"},
    [RELIC_DU_VU_DOLL] = {"Du-Vu Doll"},
    [RELIC_POCKETWATCH] = {"Pocketwatch"},
    [RELIC_INCENSE_BURNER] = {"Incense Burner", 6},
    [RELIC_GAMBLING_CHIP] = {"Gambling Chip"},
    [RELIC_CAPTAINS_WHEEL] = {"Captain's Wheel"},
    [RELIC_FOSSILIZED_HELIX] = {"Fossilized Helix"},
    [RELIC_TUNGSTEN_ROD] = {"Tungsten Rod"},
    [RELIC_MAGIC_FLOWER] = {"Magic Flower"},
    [RELIC_CHARONS_ASHES] = {"Charon's Ashes"},
    [RELIC_CHAMPION_BELT] = {"Champion Belt"},
};

/* name, target, drinkable, potency */
const potion_def sf_potions[POTION_COUNT] = {
    [POTION_NONE] = {"(empty)", TGT_NONE, 0, 0},
    [POTION_BLOCK] = {"Block Potion", TGT_NONE, 1, 12},
    [POTION_STRENGTH] = {"Strength Potion", TGT_NONE, 1, 2},
    [POTION_DEXTERITY] = {"Dexterity Potion", TGT_NONE, 1, 2},
    [POTION_ENERGY] = {"Energy Potion", TGT_NONE, 1, 2},
    [POTION_SWIFT] = {"Swift Potion", TGT_NONE, 1, 3},
    [POTION_FIRE] = {"Fire Potion", TGT_ENEMY, 1, 20},
    [POTION_EXPLOSIVE] = {"Explosive Potion", TGT_NONE, 1, 10},
    [POTION_FEAR] = {"Fear Potion", TGT_ENEMY, 1, 3},
    [POTION_WEAK] = {"Weak Potion", TGT_ENEMY, 1, 3},
    [POTION_FLEX] = {"Flex Potion", TGT_NONE, 1, 5},
    [POTION_SPEED] = {"Speed Potion", TGT_NONE, 1, 5},
    [POTION_ANCIENT] = {"Ancient Potion", TGT_NONE, 1, 1},
    [POTION_REGEN] = {"Regen Potion", TGT_NONE, 1, 5},
    [POTION_HEART_OF_IRON] = {"Heart of Iron", TGT_NONE, 1, 6},
    [POTION_ESSENCE_OF_STEEL] = {"Essence of Steel", TGT_NONE, 1, 4},
    [POTION_LIQUID_BRONZE] = {"Liquid Bronze", TGT_NONE, 1, 3},
    [POTION_GHOST_IN_A_JAR] = {"Ghost in a Jar", TGT_NONE, 1, 1},
    [POTION_FRUIT_JUICE] = {"Fruit Juice", TGT_NONE, 1, 5},
    [POTION_FAIRY] = {"Fairy in a Bottle", TGT_NONE, 0, 30},
    [POTION_BLOOD] = {"Blood Potion", TGT_NONE, 1, 20},
};

int combat_relic_slot(const sf_combat *c, int relic) {
    for (int i = 0; i < c->relic_n; i++)
        if (c->relics[i] == relic)
            return i;
    return -1;
}

int combat_has_relic(const sf_combat *c, int relic) {
    return combat_relic_slot(c, relic) >= 0;
}

void relics_at_pre_battle(sf_combat *c) {
    (void)c; /* Lantern arms itself here; its energy comes at turn start */
}

/* AbstractDungeon.returnTrulyRandomCardInCombat(): srcCommonCardPool, then
 * srcUncommonCardPool, then srcRareCardPool, minus HEALING-tagged cards
 * (Feed, Reaper), and one cardRandomRng.random(size-1). Each src pool is
 * its reward pool (run_card_pool) filled with addToBottom, so reversed
 * (cards.c, Infernal Blade's pool, is the Attack subset of this list). */
static int random_card_in_combat(sf_combat *c) {
    static const int rarities[3] = {RAR_COMMON, RAR_UNCOMMON, RAR_RARE};
    int total = 0;
    for (int r = 0; r < 3; r++) {
        int n;
        const uint8_t *pool = run_card_pool(rarities[r], &n);
        for (int i = 0; i < n; i++)
            total += !(sf_cards[pool[i]].flags & CD_HEALING);
    }
    int pick = sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), total - 1);
    for (int r = 0; r < 3; r++) {
        int n;
        const uint8_t *pool = run_card_pool(rarities[r], &n);
        for (int i = n - 1; i >= 0; i--)
            if (!(sf_cards[pool[i]].flags & CD_HEALING) && pick-- == 0)
                return pool[i];
    }
    return CARD_STRIKE; /* not reached */
}

/* DamageAllEnemiesAction(null, createDamageMatrix(n, true), THORNS): the
 * same amount to every living monster (Letter Opener, Mercury Hourglass,
 * Stone Calendar, Charon's Ashes). */
static void thorns_all(sf_combat *c, int n) {
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            combat_thorns_to_monster(c, m, n);
}

static int is_elite_fight(const sf_combat *c) {
    return c->encounter < ENC_COUNT && sf_encounters[c->encounter].pool == SF_POOL_ELITE;
}

static int has_boss(const sf_combat *c) {
    for (int m = 0; m < c->n_mon; m++)
        if (c->mon[m].id != MON_NONE && sf_monsters[c->mon[m].id].kind == MK_BOSS)
            return 1;
    return 0;
}

void relics_at_battle_start(sf_combat *c) {
    for (int i = 0; i < c->relic_n; i++) {
        switch (c->relics[i]) {
        case RELIC_ANCHOR: combat_gain_block(c, 10); break;
        case RELIC_BAG_OF_MARBLES:
            for (int m = 0; m < c->n_mon; m++)
                if (combat_alive(c, m))
                    combat_power_monster(c, m, PW_VULN, 1);
            break;
        case RELIC_VAJRA: combat_power_player(c, PW_STR, 1, 0); break;
        case RELIC_ODDLY_SMOOTH_STONE: combat_power_player(c, PW_DEX, 1, 0); break;
        case RELIC_BLOOD_VIAL: combat_heal(c, 2); break;
        case RELIC_BRONZE_SCALES: combat_power_player(c, PW_THORNS, 3, 0); break;
        case RELIC_AKABEKO: combat_power_player(c, PW_VIGOR, 8, 0); break;
        case RELIC_PEN_NIB:
            if (c->relic_counter[i] == 9) /* PenNib.atBattleStart: the 10th Attack is next */
                c->pw[PW_PEN_NIB] = 1;
            break;
        case RELIC_BAG_OF_PREPARATION: combat_draw(c, 2); break;
        case RELIC_PRESERVED_INSECT:
            /* an elite room: current HP down to (int)(max HP * 0.75) */
            if (is_elite_fight(c)) {
                for (int m = 0; m < c->n_mon; m++) {
                    int cap = (int)((float)c->mon[m].max_hp * 0.75f);
                    if (c->mon[m].hp > cap) {
                        c->mon_hp_pool = (uint16_t)(c->mon_hp_pool - (c->mon[m].hp - cap));
                        c->mon[m].hp = (int16_t)cap;
                    }
                }
            }
            break;
        case RELIC_PANTOGRAPH:
            if (has_boss(c))
                combat_heal(c, 25);
            break;
        case RELIC_THREAD_AND_NEEDLE: combat_power_player(c, PW_PLATED, 4, 0); break;
        case RELIC_GIRYA:
            if (c->relic_counter[i] > 0)
                combat_power_player(c, PW_STR, c->relic_counter[i], 0);
            break;
        case RELIC_FOSSILIZED_HELIX: /* Buffer 1: the counter holds its stacks */
            c->relic_counter[i] = 1;
            break;
        /* Du-Vu Doll: Strength per curse in the deck; the engine has no curse. */
        default: break;
        }
    }
    relics_on_hp_change(c); /* Red Skull's battle-start check */
}

/* atTurnStart (every turn, the first included; Lantern's first-turn energy
 * is in play_first_turn). It runs after the turn's block loss and energy
 * recharge (play.c start_turn): the game queues these actions, and they
 * resolve after both. c->turn is the turn that starts. */
void relics_at_turn_start(sf_combat *c, int first) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        int16_t *n = &c->relic_counter[i];
        switch (c->relics[i]) {
        case RELIC_HAPPY_FLOWER:
            if (++*n >= 3) {
                *n = 0;
                c->energy++;
            }
            break;
        case RELIC_ANCIENT_TEA_SET: /* counter 1: a rest site charged it */
            if (first && *n == 1) {
                *n = 0;
                c->energy = (uint8_t)(c->energy + 2);
            }
            break;
        case RELIC_ART_OF_WAR: /* counter 1: an Attack was played since the last turn start */
            if (!first && *n == 0)
                c->energy++;
            *n = 0;
            break;
        case RELIC_HORN_CLEAT:
            if (c->turn == 2)
                combat_gain_block(c, 14);
            break;
        case RELIC_CAPTAINS_WHEEL:
            if (c->turn == 3)
                combat_gain_block(c, 18);
            break;
        case RELIC_LETTER_OPENER: *n = 0; break; /* Skills played this turn */
        case RELIC_MERCURY_HOURGLASS:
            thorns_all(c, 3);
            combat_check_end(c);
            break;
        case RELIC_INCENSE_BURNER:
            if (++*n >= 6) {
                *n = 0;
                combat_power_player(c, PW_INTANGIBLE, 1, 0);
            }
            break;
        /* Stone Calendar's counter is the turn number (c->turn). */
        default: break;
        }
    }
}

void relics_at_turn_start_post_draw(sf_combat *c, int played, int first) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        switch (c->relics[i]) {
        case RELIC_POCKETWATCH:
            if (!first && played <= 3)
                combat_draw(c, 3);
            break;
        case RELIC_GAMBLING_CHIP:
            /* GamblingChipAction, queued behind the whole of turn 1's start */
            if (first) {
                combat_drain(c);
                if (c->hand_n > 0 && c->phase == PH_PLAYER) {
                    memset(&c->pending, 0, sizeof c->pending);
                    c->pending.kind = CH_GAMBLING_CHIP;
                    c->phase = PH_CHOICE;
                }
            }
            break;
        default: break;
        }
    }
}

void relics_on_player_end_turn(sf_combat *c) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        switch (c->relics[i]) {
        case RELIC_ORICHALCUM:
            if (c->block == 0)
                combat_gain_block(c, 6);
            break;
        case RELIC_STONE_CALENDAR:
            if (c->turn == 7) {
                thorns_all(c, 52);
                combat_check_end(c);
            }
            break;
        default: break;
        }
    }
}

/* onUseCard of an Attack: Pen Nib, Kunai, Shuriken, Ornamental Fan,
 * Nunchaku, Art of War. */
void relics_on_attack_played(sf_combat *c) {
    for (int i = 0; i < c->relic_n; i++) {
        int16_t *n = &c->relic_counter[i];
        switch (c->relics[i]) {
        case RELIC_PEN_NIB:
            if (++*n >= 10)
                *n = 0;
            else if (*n == 9)
                c->pw[PW_PEN_NIB] = 1;
            break;
        case RELIC_KUNAI:
            if (c->attacks_played % 3 == 0)
                combat_power_player(c, PW_DEX, 1, 0);
            break;
        case RELIC_SHURIKEN:
            if (c->attacks_played % 3 == 0)
                combat_power_player(c, PW_STR, 1, 0);
            break;
        case RELIC_ORNAMENTAL_FAN:
            if (c->attacks_played % 3 == 0)
                combat_gain_block(c, 4);
            break;
        case RELIC_NUNCHAKU:
            if (++*n >= 10) {
                *n = 0;
                c->energy++;
            }
            break;
        case RELIC_ART_OF_WAR: *n = 1; break;
        default: break;
        }
    }
}

/* Mummified Hand: one random card in hand whose cost and cost this turn
 * are above 0 costs 0 this turn (cardRandomRng.random(0, n-1) over the
 * hand in order; the played Power is still in the card queue, so not a
 * candidate: here it has left the hand already). */
static void mummified_hand(sf_combat *c) {
    int idx[SF_MAX_HAND], n = 0;
    for (int i = 0; i < c->hand_n; i++)
        if (c->hand[i].cost > 0 && combat_card_cost(c, &c->hand[i]) > 0)
            idx[n++] = i;
    if (n == 0)
        return;
    int k = sf_rng_random_range(combat_rng(c, SF_STREAM_CARD_RANDOM), 0, n - 1);
    c->hand[idx[k]].flags |= CF_FREE_TURN;
}

/* The hooks act at once (counters, Mummified Hand's pick, Bird-Faced
 * Urn's heal, pushed to the top); the draw and damage they queue at the
 * bottom follow, in relic order, so Mummified Hand never picks the card
 * Ink Bottle draws, whichever came first. */
void relics_on_card_played(sf_combat *c, int type) {
    uint16_t queued = 0; /* bit i: relics[i] queued its action */
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        int16_t *n = &c->relic_counter[i];
        switch (c->relics[i]) {
        case RELIC_INK_BOTTLE:
            if (++*n >= 10) {
                *n = 0;
                queued |= (uint16_t)(1u << i);
            }
            break;
        case RELIC_LETTER_OPENER:
            if (type == CT_SKILL && ++*n % 3 == 0) {
                *n = 0;
                queued |= (uint16_t)(1u << i);
            }
            break;
        case RELIC_MUMMIFIED_HAND:
            if (type == CT_POWER)
                mummified_hand(c);
            break;
        case RELIC_BIRD_FACED_URN:
            if (type == CT_POWER)
                combat_heal(c, 2);
            break;
        /* Blue Candle: curses become playable; the engine has no curse. */
        default: break;
        }
    }
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        if (!(queued & (1u << i)))
            continue;
        if (c->relics[i] == RELIC_INK_BOTTLE) {
            combat_draw(c, 1);
        } else { /* Letter Opener */
            thorns_all(c, 5);
            combat_check_end(c);
        }
    }
}

/* CardGroup.moveToExhaustPile: relics' onExhaust come before the powers'. */
void relics_on_exhaust(sf_combat *c) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        switch (c->relics[i]) {
        case RELIC_CHARONS_ASHES: thorns_all(c, 3); break; /* to the top: at once */
        case RELIC_DEAD_BRANCH:
            /* the card is picked now; it reaches the hand from the bottom of the queue */
            if (combat_alive_count(c) > 0)
                combat_defer(c, DQ_ADD_CARD, random_card_in_combat(c));
            break;
        default: break;
        }
    }
}

/* AbstractMonster.die() of a monster killed by damage, after its powers'
 * onDeath: Gremlin Horn unless every monster is now dying or gone. */
void relics_on_monster_death(sf_combat *c) {
    if (!combat_has_relic(c, RELIC_GREMLIN_HORN) || combat_alive_count(c) == 0)
        return;
    combat_defer(c, DQ_ENERGY, 1);
    combat_defer(c, DQ_DRAW, 1);
}

/* onShuffle: when the discard pile is shuffled into the draw pile (not the
 * deck's first shuffle). */
void relics_on_shuffle(sf_combat *c) {
    int i = combat_relic_slot(c, RELIC_SUNDIAL);
    if (i >= 0 && ++c->relic_counter[i] >= 3) {
        c->relic_counter[i] = 0;
        c->energy = (uint8_t)(c->energy + 2);
    }
}

void relics_on_potion_used(sf_combat *c) {
    if (combat_has_relic(c, RELIC_TOY_ORNITHOPTER))
        combat_heal(c, 5);
}

/* Unceasing Top: with the action queue empty, in the player's turn, an
 * empty hand draws 1 if there is a card to draw and No Draw is off. */
void relics_on_refresh_hand(sf_combat *c) {
    if (!combat_has_relic(c, RELIC_UNCEASING_TOP) || c->phase != PH_PLAYER || c->pending.active ||
        c->hand_n > 0 || c->pw[PW_NO_DRAW] > 0 || c->draw_n + c->discard_n == 0)
        return;
    combat_draw(c, 1);
    combat_drain(c);
    combat_check_end(c);
}

/* wasHPLost with more than 0 HP lost: Centennial Puzzle's draw 3 (to the
 * top of the queue, once per combat: counter 1 once used) and Self-Forming
 * Clay's 3 block next turn. */
void relics_was_hp_lost(sf_combat *c) {
    for (int i = 0; i < c->relic_n; i++) {
        switch (c->relics[i]) {
        case RELIC_CENTENNIAL_PUZZLE:
            if (c->relic_counter[i] == 0) {
                c->relic_counter[i] = 1;
                combat_draw(c, 3);
            }
            break;
        case RELIC_SELF_FORMING_CLAY: /* NextTurnBlockPower 3: the counter holds it */
            c->relic_counter[i] = (int16_t)(c->relic_counter[i] + 3);
            break;
        default: break;
        }
    }
}

/* Lizard Tail (counter 0: unused; 1: used, kept by the run): at 0 HP the
 * player heals half its max HP (at least 1), as a heal (Magic Flower). */
int relics_on_death(sf_combat *c) {
    int i = combat_relic_slot(c, RELIC_LIZARD_TAIL);
    if (i < 0 || c->relic_counter[i] != 0)
        return 0;
    c->relic_counter[i] = 1;
    int heal = c->max_hp / 2;
    heal = relics_heal_amount(c, heal < 1 ? 1 : heal);
    c->hp = (int16_t)(heal > c->max_hp ? c->max_hp : heal);
    relics_on_hp_change(c);
    return 1;
}

/* Magic Flower: heals in combat are 1.5 times as large, MathUtils.round. */
int relics_heal_amount(const sf_combat *c, int amount) {
    if (combat_has_relic(c, RELIC_MAGIC_FLOWER))
        amount = (int)floorf((float)amount * 1.5f + 0.5f);
    return amount;
}

void relics_on_victory(sf_combat *c) {
    if (c->hp <= 0)
        return;
    if (combat_has_relic(c, RELIC_MEAT_ON_THE_BONE) && (float)c->hp <= (float)c->max_hp / 2.0f)
        combat_heal(c, 12);
    if (combat_has_relic(c, RELIC_BURNING_BLOOD))
        combat_heal(c, 6);
}

/* Red Skull: +3 Strength while HP <= 50% of max (isBloodied). */
void relics_on_hp_change(sf_combat *c) {
    if (!combat_has_relic(c, RELIC_RED_SKULL) || c->phase == PH_OVER)
        return;
    int bloodied = c->hp > 0 && (float)c->hp <= (float)c->max_hp / 2.0f;
    if (bloodied && !(c->flags & FL_RED_SKULL_ON)) {
        c->flags |= FL_RED_SKULL_ON;
        c->pw[PW_STR] = (int16_t)(c->pw[PW_STR] + 3);
    } else if (!bloodied && (c->flags & FL_RED_SKULL_ON)) {
        c->flags &= (uint8_t)~FL_RED_SKULL_ON;
        c->pw[PW_STR] = (int16_t)(c->pw[PW_STR] - 3);
    }
}

int potion_needs_target(int potion) {
    return potion > 0 && potion < POTION_COUNT && sf_potions[potion].target == TGT_ENEMY;
}

int potion_use(sf_combat *c, int slot, int target) {
    if (slot < 0 || slot >= SF_POTION_SLOTS)
        return SF_EINVAL;
    int p = c->potions[slot];
    if (p == POTION_NONE || !sf_potions[p].drinkable)
        return SF_EINVAL;
    if (potion_needs_target(p) && !combat_alive(c, target))
        return SF_EINVAL;
    int pot = sf_potions[p].potency;
    c->potions[slot] = POTION_NONE;
    c->potions_used++;
    switch (p) {
    case POTION_BLOCK: combat_gain_block(c, pot); break;
    case POTION_STRENGTH: combat_power_player(c, PW_STR, pot, 0); break;
    case POTION_DEXTERITY: combat_power_player(c, PW_DEX, pot, 0); break;
    case POTION_ENERGY: c->energy = (uint8_t)(c->energy + pot); break;
    case POTION_SWIFT: combat_draw(c, pot); break;
    case POTION_FIRE: combat_thorns_to_monster(c, target, pot); break;
    case POTION_EXPLOSIVE:
        for (int m = 0; m < c->n_mon; m++)
            if (combat_alive(c, m))
                combat_thorns_to_monster(c, m, pot);
        break;
    case POTION_FEAR: combat_power_monster(c, target, PW_VULN, pot); break;
    case POTION_WEAK: combat_power_monster(c, target, PW_WEAK, pot); break;
    case POTION_FLEX:
        combat_power_player(c, PW_STR, pot, 0);
        combat_power_player(c, PW_LOSE_STR, pot, 0);
        break;
    case POTION_SPEED:
        combat_power_player(c, PW_DEX, pot, 0);
        combat_power_player(c, PW_LOSE_DEX, pot, 0);
        break;
    case POTION_ANCIENT: combat_power_player(c, PW_ARTIFACT, pot, 0); break;
    case POTION_REGEN: combat_power_player(c, PW_REGEN, pot, 0); break;
    case POTION_HEART_OF_IRON: combat_power_player(c, PW_METALLICIZE, pot, 0); break;
    case POTION_ESSENCE_OF_STEEL: combat_power_player(c, PW_PLATED, pot, 0); break;
    case POTION_LIQUID_BRONZE: combat_power_player(c, PW_THORNS, pot, 0); break;
    case POTION_GHOST_IN_A_JAR: combat_power_player(c, PW_INTANGIBLE, pot, 0); break;
    case POTION_FRUIT_JUICE:
        c->max_hp = (int16_t)(c->max_hp + pot);
        combat_heal(c, pot);
        break;
    case POTION_BLOOD: combat_heal(c, (int)((float)c->max_hp * (float)pot / 100.0f)); break;
    default: break;
    }
    relics_on_potion_used(c);
    combat_drain(c); /* Juggernaut after a Block Potion, Evolve after a draw */
    combat_check_end(c);
    return SF_OK;
}
