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
    [RELIC_ABACUS] = {"The Abacus", 0, RS_SHOP},
    [RELIC_BRIMSTONE] = {"Brimstone", 0, RS_SHOP},
    [RELIC_CAULDRON] = {"Cauldron", 0, RS_SHOP},
    [RELIC_CHEMICAL_X] = {"Chemical X", 0, RS_SHOP},
    [RELIC_CLOCKWORK_SOUVENIR] = {"Clockwork Souvenir", 0, RS_SHOP},
    [RELIC_DOLLYS_MIRROR] = {"Dolly's Mirror", 0, RS_SHOP},
    [RELIC_FROZEN_EYE] = {"Frozen Eye", 0, RS_SHOP},
    [RELIC_HAND_DRILL] = {"Hand Drill", 0, RS_SHOP},
    [RELIC_LEES_WAFFLE] = {"Lee's Waffle", 0, RS_SHOP},
    [RELIC_MEDICAL_KIT] = {"Medical Kit", 0, RS_SHOP},
    [RELIC_MEMBERSHIP_CARD] = {"Membership Card", 0, RS_SHOP},
    [RELIC_ORANGE_PELLETS] = {"Orange Pellets", 0, RS_SHOP},
    [RELIC_ORRERY] = {"Orrery", 0, RS_SHOP},
    [RELIC_PRISMATIC_SHARD] = {"Prismatic Shard", 0, RS_SHOP},
    [RELIC_SLING_OF_COURAGE] = {"Sling of Courage", 0, RS_SHOP},
    [RELIC_STRANGE_SPOON] = {"Strange Spoon", 0, RS_SHOP},
    [RELIC_TOOLBOX] = {"Toolbox", 0, RS_SHOP},
    [RELIC_GOLDEN_IDOL] = {"Golden Idol", 0, RS_EVENT},
    [RELIC_NEOWS_LAMENT] = {"Neow's Lament", 4, RS_EVENT},
    [RELIC_ODD_MUSHROOM] = {"Odd Mushroom", 0, RS_EVENT},
    [RELIC_FACE_OF_CLERIC] = {"Face of Cleric", 0, RS_EVENT},
    [RELIC_CULTIST_MASK] = {"Cultist Headpiece", 0, RS_EVENT},
    [RELIC_GREMLIN_MASK] = {"Gremlin Visage", 0, RS_EVENT},
    [RELIC_NLOTHS_MASK] = {"N'loth's Hungry Face", 0, RS_EVENT},
    [RELIC_SSSERPENT_HEAD] = {"Ssserpent Head", 0, RS_EVENT},
    [RELIC_WARPED_TONGS] = {"Warped Tongs", 0, RS_EVENT},
    [RELIC_SPIRIT_POOP] = {"Spirit Poop", 0, RS_EVENT},
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

/* Frozen Eye: the player sees the draw pile in order. A shuffle in true
 * mode leaves it seen; in belief mode the shuffled order is not yet drawn
 * (the draws reveal it: the search knows less than the player, never more). */
int relics_draw_order_seen(const sf_combat *c) {
    return combat_has_relic(c, RELIC_FROZEN_EYE) && !(c->flags & FL_BELIEF);
}

void relics_at_pre_battle(sf_combat *c) {
    /* Lantern arms itself here; its energy comes at turn start */
    if (relics_draw_order_seen(c))
        c->draw_known = c->draw_n; /* Frozen Eye: the shuffled deck is seen */
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
        case RELIC_CLOCKWORK_SOUVENIR: combat_power_player(c, PW_ARTIFACT, 1, 0); break;
        case RELIC_SLING_OF_COURAGE: /* the room's eliteTrigger */
            if (is_elite_fight(c))
                combat_power_player(c, PW_STR, 2, 0);
            break;
        case RELIC_GREMLIN_MASK: combat_power_player(c, PW_WEAK, 1, 0); break;
        case RELIC_NEOWS_LAMENT:
            /* counter: fights it has spent (the game counts 3 down); in
             * each of the first 3, every monster's current HP is set to 1 */
            if (c->relic_counter[i] < 3) {
                c->relic_counter[i]++;
                for (int m = 0; m < c->n_mon; m++) {
                    if (c->mon[m].id == MON_NONE || c->mon[m].hp <= 0)
                        continue;
                    c->mon_hp_pool = (uint16_t)(c->mon_hp_pool - (c->mon[m].hp - 1));
                    c->mon[m].hp = 1;
                }
            }
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
    /* every relic's atTurnStart runs (counters move) even after Mercury
     * Hourglass's damage ended the fight: the game only queues the damage */
    for (int i = 0; i < c->relic_n; i++) {
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
        case RELIC_LETTER_OPENER: *n = 0; break;  /* Skills played this turn */
        case RELIC_ORANGE_PELLETS: *n = 0; break; /* card types played this turn */
        case RELIC_MERCURY_HOURGLASS:
            if (c->phase != PH_OVER) {
                combat_thorns_all(c, 3);
                combat_check_end(c);
            }
            break;
        case RELIC_BRIMSTONE:
            /* addToTop: the monsters' +1 each (last monster first), then
             * the player's +2 */
            for (int m = c->n_mon - 1; m >= 0; m--)
                if (combat_alive(c, m))
                    combat_power_monster(c, m, PW_STR, 1);
            combat_power_player(c, PW_STR, 2, 0);
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

/* UpgradeRandomCardAction: the hand's cards that can be upgraded (no
 * status), in hand order, shuffled as CardGroup.shuffle() does
 * (Collections.shuffle with java.util.Random(shuffleRng.randomLong())); the
 * first is upgraded. None: no random number is drawn. */
static void warped_tongs(sf_combat *c) {
    int idx[SF_MAX_HAND], n = 0;
    for (int i = 0; i < c->hand_n; i++)
        if (sf_cards[c->hand[i].id].type != CT_STATUS && combat_can_upgrade(&c->hand[i]))
            idx[n++] = i;
    if (n == 0)
        return;
    combat_java_shuffle(c, idx, n, sizeof idx[0]);
    combat_upgrade_card(&c->hand[idx[0]]);
}

void relics_at_turn_start_post_draw(sf_combat *c, int played, int first) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        switch (c->relics[i]) {
        case RELIC_POCKETWATCH:
            if (!first && played <= 3)
                combat_draw(c, 3);
            break;
        case RELIC_WARPED_TONGS: warped_tongs(c); break;
        case RELIC_GAMBLING_CHIP:
            /* GamblingChipAction, queued behind the whole of turn 1's start */
            if (first) {
                combat_drain(c);
                if (c->phase == PH_PLAYER) {
                    memset(&c->pending, 0, sizeof c->pending);
                    combat_open_choice(c, CH_GAMBLE, 0); /* Gambler's Brew's screen */
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
                combat_thorns_all(c, 52);
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

/* RemoveDebuffsAction on the player: every DEBUFF-type power goes
 * (combat_is_debuff; Strength and Dexterity when below 0). */
static void remove_player_debuffs(sf_combat *c) {
    for (int pw = 0; pw < PW_N; pw++)
        if (c->pw[pw] != 0 && combat_is_debuff(pw, c->pw[pw]))
            c->pw[pw] = 0;
    c->just = 0; /* nothing left for justApplied to hold back */
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
        case RELIC_ORANGE_PELLETS: /* counter bits: Attack 1, Skill 2, Power 4 this turn */
            *n = (int16_t)(*n | (type == CT_ATTACK  ? 1
                                 : type == CT_SKILL ? 2
                                 : type == CT_POWER ? 4
                                                    : 0));
            if (*n == 7) {
                *n = 0;
                queued |= (uint16_t)(1u << i);
            }
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
        } else if (c->relics[i] == RELIC_ORANGE_PELLETS) {
            remove_player_debuffs(c);
        } else { /* Letter Opener */
            combat_thorns_all(c, 5);
            combat_check_end(c);
        }
    }
}

/* CardGroup.moveToExhaustPile: relics' onExhaust come before the powers'. */
void relics_on_exhaust(sf_combat *c) {
    for (int i = 0; i < c->relic_n && c->phase != PH_OVER; i++) {
        switch (c->relics[i]) {
        case RELIC_CHARONS_ASHES: combat_thorns_all(c, 3); break; /* to the top: at once */
        case RELIC_DEAD_BRANCH:
            /* the card is picked now; it reaches the hand from the bottom of the queue */
            if (combat_alive_count(c) > 0)
                combat_defer(c, DQ_ADD_CARD, combat_random_card(c, -1));
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
    if (combat_has_relic(c, RELIC_ABACUS)) /* GainBlockAction(6), to the bottom */
        combat_defer(c, DQ_BLOCK, 6);
    int i = combat_relic_slot(c, RELIC_SUNDIAL);
    if (i >= 0 && ++c->relic_counter[i] >= 3) {
        c->relic_counter[i] = 0;
        c->energy = (uint8_t)(c->energy + 2);
    }
}

/* Hand Drill: ApplyPowerAction(Vulnerable 2) to the bottom of the queue. */
void relics_on_block_broken(sf_combat *c, int m) {
    if (combat_has_relic(c, RELIC_HAND_DRILL))
        combat_defer(c, DQ_HAND_DRILL, m);
}

int relics_status_playable(const sf_combat *c, const sf_card *k) {
    return sf_cards[k->id].type == CT_STATUS && k->id != CARD_NONE &&
           combat_has_relic(c, RELIC_MEDICAL_KIT);
}

/* UseCardAction: the coin is thrown only for a card that exhausts, when
 * the relic is held and the card is no Power. */
int relics_spoon_keeps(sf_combat *c, const sf_card *k) {
    if (!combat_has_relic(c, RELIC_STRANGE_SPOON) || sf_cards[k->id].type == CT_POWER)
        return 0;
    return sf_rng_random_bool(combat_rng(c, SF_STREAM_CARD_RANDOM));
}

/* Chemical X: the X-cost actions (Whirlwind, Transmutation) add 2 to X. */
int relics_x_bonus(const sf_combat *c) {
    return combat_has_relic(c, RELIC_CHEMICAL_X) ? 2 : 0;
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

/* Meat on the Bone's onTrigger comes first (AbstractRoom.endBattle), then
 * the relics' onVictory in relic order: Burning Blood's heal, Face of
 * Cleric's increaseMaxHp(1) (max HP +1, then a heal of 1). */
void relics_on_victory(sf_combat *c) {
    if (c->hp <= 0)
        return;
    if (combat_has_relic(c, RELIC_MEAT_ON_THE_BONE) && (float)c->hp <= (float)c->max_hp / 2.0f)
        combat_heal(c, 12);
    for (int i = 0; i < c->relic_n; i++) {
        if (c->relics[i] == RELIC_BURNING_BLOOD) {
            combat_heal(c, 6);
        } else if (c->relics[i] == RELIC_FACE_OF_CLERIC) {
            c->max_hp = (int16_t)(c->max_hp + 1);
            combat_heal(c, 1);
        }
    }
}

/* Red Skull: +3 Strength while HP <= 50% of max (isBloodied). Both
 * changes are ApplyPowerAction(StrengthPower(+-3)) to the top of the
 * queue (RedSkull.onBloodied / onNotBloodied): the -3 is a debuff, which
 * Artifact stops while the relic still turns off, so the +3 stays. */
void relics_on_hp_change(sf_combat *c) {
    if (!combat_has_relic(c, RELIC_RED_SKULL) || c->phase == PH_OVER)
        return;
    int bloodied = c->hp > 0 && (float)c->hp <= (float)c->max_hp / 2.0f;
    if (bloodied && !(c->flags & FL_RED_SKULL_ON)) {
        c->flags |= FL_RED_SKULL_ON;
        combat_power_player(c, PW_STR, 3, 0);
    } else if (!bloodied && (c->flags & FL_RED_SKULL_ON)) {
        c->flags &= (uint8_t)~FL_RED_SKULL_ON;
        combat_power_player(c, PW_STR, -3, 0);
    }
}

/* ------------------------------------------------------------------------
 * Potions: each row's `use` is potions/<Name>.use (game-rules §8).
 * ---------------------------------------------------------------------- */

static void u_block(sf_combat *c, int pot, int t) {
    (void)t;
    combat_gain_block(c, pot);
}
static void u_strength(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_STR, pot, 0);
}
static void u_dexterity(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_DEX, pot, 0);
}
static void u_energy(sf_combat *c, int pot, int t) {
    (void)t;
    c->energy = (uint8_t)(c->energy + pot);
}
static void u_draw(sf_combat *c, int pot, int t) {
    (void)t;
    combat_draw(c, pot);
}
static void u_fire(sf_combat *c, int pot, int t) {
    combat_thorns_to_monster(c, t, pot);
}
static void u_explosive(sf_combat *c, int pot, int t) {
    (void)t;
    combat_thorns_all(c, pot);
}
static void u_fear(sf_combat *c, int pot, int t) {
    combat_power_monster(c, t, PW_VULN, pot);
}
static void u_weak(sf_combat *c, int pot, int t) {
    combat_power_monster(c, t, PW_WEAK, pot);
}
static void u_flex(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_STR, pot, 0);
    combat_power_player(c, PW_LOSE_STR, pot, 0);
}
static void u_speed(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_DEX, pot, 0);
    combat_power_player(c, PW_LOSE_DEX, pot, 0);
}
static void u_ancient(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_ARTIFACT, pot, 0);
}
static void u_regen(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_REGEN, pot, 0);
}
static void u_heart_of_iron(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_METALLICIZE, pot, 0);
}
static void u_essence_of_steel(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_PLATED, pot, 0);
}
static void u_liquid_bronze(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_THORNS, pot, 0);
}
static void u_ghost(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_INTANGIBLE, pot, 0);
}
static void u_fruit_juice(sf_combat *c, int pot, int t) {
    (void)t;
    c->max_hp = (int16_t)(c->max_hp + pot);
    combat_heal(c, pot);
}
static void u_blood(sf_combat *c, int pot, int t) {
    (void)t;
    combat_heal(c, (int)((float)c->max_hp * (float)pot / 100.0f));
}

/* DiscoveryAction(type, 1): three distinct cards of the type, each one
 * returnTrulyRandomCardInCombat(type) draw (cardRandomRng), a duplicate
 * re-drawn; the pick is a choice screen (CH_DISCOVERY). The game draws a
 * fresh, unused set on every later frame of the action; those draws are not
 * reproduced (docs/engine.md "Potions"). */
static void discover(sf_combat *c, int type) {
    combat_discover(c, CH_DISCOVERY, type);
}
static void u_attack(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    discover(c, CT_ATTACK);
}
static void u_skill(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    discover(c, CT_SKILL);
}
static void u_power(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    discover(c, CT_POWER);
}

/* ColorlessPotion: DiscoveryAction(true, 1): three distinct colorless
 * cards, each one returnTrulyRandomColorlessCardInCombat draw
 * (cardRandomRng), a duplicate re-drawn; the pick costs 0 this turn. */
static void u_colorless(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    combat_discover(c, CH_DISCOVERY, DISCOVER_COLORLESS);
}

/* ArmamentsAction(true): every card in hand that can be upgraded is, in
 * place. */
static void u_blessing_of_the_forge(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    for (int i = 0; i < c->hand_n; i++)
        if (combat_can_upgrade(&c->hand[i]))
            combat_upgrade_card(&c->hand[i]);
}

/* Three PlayTopCardAction(getRandomMonster(cardRandomRng), false): the
 * three targets are drawn when the potion is used, then the actions take
 * the top card one after another (an empty draw pile is reshuffled first;
 * none left: no card), before any of them plays; the cards then play in
 * that order, free, like Havoc's (pending.queue), and go to their piles as
 * if played from the hand. */
static void u_distilled_chaos(sf_combat *c, int pot, int t) {
    (void)t;
    int tgt[SF_CARD_QUEUE];
    for (int i = 0; i < pot && i < SF_CARD_QUEUE; i++)
        tgt[i] = combat_random_monster(c);
    sf_pending *p = &c->pending;
    memset(p, 0, sizeof *p);
    for (int i = 0; i < pot && i < SF_CARD_QUEUE; i++)
        if (!play_queue_top(c, tgt[i]))
            break;
    play_next_queued(c);
}

static void u_duplication(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_DUPLICATION, pot, 0);
}

/* ExhaustAction(false, true, true): exhaust any number of hand cards. */
static void u_elixir(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    combat_open_choice(c, CH_ELIXIR, 0);
}

/* AbstractDungeon.returnRandomPotion(true) (potionRng): a rarity roll
 * random(0, 99) (common below 65, uncommon below 90, rare otherwise), one
 * PotionHelper.getRandomPotion draw that "limited" always throws away, then
 * draws until one has the rarity and is not Fruit Juice. Returns a run
 * potion id (the Ironclad list, §11). */
static int random_potion_limited(sf_combat *c) {
    sf_rng *r = combat_rng(c, SF_STREAM_POTION);
    int roll = sf_rng_random_range(r, 0, 99);
    int rarity = roll < 65 ? 1 : roll < 90 ? 2 : 3;
    int n = sf_run_potion_count() - 1; /* the list, "(empty)" left out */
    int juice = sf_run_potion_lookup("Fruit Juice");
    (void)sf_rng_random(r, n - 1);
    for (;;) {
        int item = 1 + sf_rng_random(r, n - 1);
        if (item != juice && run_potion_rarity(item) == rarity)
            return item;
    }
}

/* One ObtainPotionAction(returnRandomPotion(true)) per potion slot, all
 * rolled at use; each fills the first empty slot, if any (the brew's own
 * slot is empty by then). A potion the engine does not model leaves its
 * slot empty. */
static void u_entropic_brew(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    for (int i = 0; i < c->potion_slots; i++) {
        int e = sf_run_potion_engine(random_potion_limited(c));
        for (int s = 0; s < c->potion_slots; s++) {
            if (c->potions[s] == POTION_NONE) {
                if (e > 0)
                    c->potions[s] = (uint8_t)e;
                break;
            }
        }
    }
}

/* GamblingChipAction(player, true), only with cards in hand: discard any
 * number of hand cards, then draw that many. */
static void u_gamblers_brew(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    combat_open_choice(c, CH_GAMBLE, 0);
}

/* BetterDiscardPileToHandAction(1, 0). */
static void u_liquid_memories(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    combat_open_choice(c, CH_LIQUID_MEMORIES, 0);
}

/* DrawCardAction(5), then RandomizeHandCostAction: every card in hand whose
 * cost is >= 0 (not X, not unplayable) draws cardRandomRng.random(3); a
 * different number becomes its cost for the rest of the combat and this
 * turn (a "costs 0 this turn" ends), the same number changes nothing. What
 * the draw queued (Evolve, Fire Breathing) runs after. */
static void u_snecko_oil(sf_combat *c, int pot, int t) {
    (void)t;
    combat_draw(c, pot);
    for (int i = 0; i < c->hand_n; i++) {
        sf_card *k = &c->hand[i];
        if (k->cost < 0)
            continue;
        int cost = sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), 3);
        if (k->cost != cost) {
            k->cost = (int8_t)cost;
            k->flags &= (uint8_t)~CF_TURN_FLAGS;
        }
    }
}

static void u_smoke_bomb(sf_combat *c, int pot, int t) {
    (void)pot, (void)t;
    combat_player_escape(c);
}

/* RitualPower(player, 1, true): Strength at the end of each player turn
 * (play.c play_end_turn). */
static void u_cultist(sf_combat *c, int pot, int t) {
    (void)t;
    combat_power_player(c, PW_RITUAL, pot, 0);
}

/* name, target, drinkable, potency, no_boss, use */
const potion_def sf_potions[POTION_COUNT] = {
    [POTION_NONE] = {"(empty)", TGT_NONE, 0, 0, 0, NULL},
    [POTION_BLOCK] = {"Block Potion", TGT_NONE, 1, 12, 0, u_block},
    [POTION_STRENGTH] = {"Strength Potion", TGT_NONE, 1, 2, 0, u_strength},
    [POTION_DEXTERITY] = {"Dexterity Potion", TGT_NONE, 1, 2, 0, u_dexterity},
    [POTION_ENERGY] = {"Energy Potion", TGT_NONE, 1, 2, 0, u_energy},
    [POTION_SWIFT] = {"Swift Potion", TGT_NONE, 1, 3, 0, u_draw},
    [POTION_FIRE] = {"Fire Potion", TGT_ENEMY, 1, 20, 0, u_fire},
    [POTION_EXPLOSIVE] = {"Explosive Potion", TGT_NONE, 1, 10, 0, u_explosive},
    [POTION_FEAR] = {"Fear Potion", TGT_ENEMY, 1, 3, 0, u_fear},
    [POTION_WEAK] = {"Weak Potion", TGT_ENEMY, 1, 3, 0, u_weak},
    [POTION_FLEX] = {"Flex Potion", TGT_NONE, 1, 5, 0, u_flex},
    [POTION_SPEED] = {"Speed Potion", TGT_NONE, 1, 5, 0, u_speed},
    [POTION_ANCIENT] = {"Ancient Potion", TGT_NONE, 1, 1, 0, u_ancient},
    [POTION_REGEN] = {"Regen Potion", TGT_NONE, 1, 5, 0, u_regen},
    [POTION_HEART_OF_IRON] = {"Heart of Iron", TGT_NONE, 1, 6, 0, u_heart_of_iron},
    [POTION_ESSENCE_OF_STEEL] = {"Essence of Steel", TGT_NONE, 1, 4, 0, u_essence_of_steel},
    [POTION_LIQUID_BRONZE] = {"Liquid Bronze", TGT_NONE, 1, 3, 0, u_liquid_bronze},
    [POTION_GHOST_IN_A_JAR] = {"Ghost in a Jar", TGT_NONE, 1, 1, 0, u_ghost},
    [POTION_FRUIT_JUICE] = {"Fruit Juice", TGT_NONE, 1, 5, 0, u_fruit_juice},
    [POTION_FAIRY] = {"Fairy in a Bottle", TGT_NONE, 0, 30, 0, NULL},
    [POTION_BLOOD] = {"Blood Potion", TGT_NONE, 1, 20, 0, u_blood},
    [POTION_ATTACK] = {"Attack Potion", TGT_NONE, 1, 1, 0, u_attack},
    [POTION_SKILL] = {"Skill Potion", TGT_NONE, 1, 1, 0, u_skill},
    [POTION_POWER] = {"Power Potion", TGT_NONE, 1, 1, 0, u_power},
    [POTION_BLESSING_OF_THE_FORGE] = {"Blessing of the Forge", TGT_NONE, 1, 0, 0,
                                      u_blessing_of_the_forge},
    [POTION_DISTILLED_CHAOS] = {"Distilled Chaos", TGT_NONE, 1, 3, 0, u_distilled_chaos},
    [POTION_DUPLICATION] = {"Duplication Potion", TGT_NONE, 1, 1, 0, u_duplication},
    [POTION_ELIXIR] = {"Elixir", TGT_NONE, 1, 0, 0, u_elixir},
    [POTION_ENTROPIC_BREW] = {"Entropic Brew", TGT_NONE, 1, 3, 0, u_entropic_brew},
    [POTION_GAMBLERS_BREW] = {"Gambler's Brew", TGT_NONE, 1, 0, 0, u_gamblers_brew},
    [POTION_LIQUID_MEMORIES] = {"Liquid Memories", TGT_NONE, 1, 1, 0, u_liquid_memories},
    [POTION_SNECKO_OIL] = {"Snecko Oil", TGT_NONE, 1, 5, 0, u_snecko_oil},
    [POTION_SMOKE_BOMB] = {"Smoke Bomb", TGT_NONE, 1, 0, 1, u_smoke_bomb},
    [POTION_CULTIST] = {"Cultist Potion", TGT_NONE, 1, 1, 0, u_cultist},
    [POTION_COLORLESS] = {"Colorless Potion", TGT_NONE, 1, 1, 0, u_colorless},
};

int potion_needs_target(int potion) {
    return potion > 0 && potion < POTION_COUNT && sf_potions[potion].target == TGT_ENEMY;
}

int potion_can_use(const sf_combat *c, int potion) {
    if (potion <= POTION_NONE || potion >= POTION_COUNT || !sf_potions[potion].drinkable ||
        !sf_potions[potion].use)
        return 0;
    /* SmokeBomb.canUse looks at every monster of the fight, dead ones
     * included (a split Slime Boss stays in the game's list, not in ours):
     * a boss encounter, or a boss among the monsters */
    if (!sf_potions[potion].no_boss)
        return 1;
    if (c->encounter < ENC_COUNT && sf_encounters[c->encounter].pool == SF_POOL_BOSS)
        return 0;
    for (int m = 0; m < c->n_mon; m++)
        if (sf_monsters[c->mon[m].id].kind == MK_BOSS)
            return 0;
    return 1;
}

int potion_use(sf_combat *c, int slot, int target) {
    if (slot < 0 || slot >= c->potion_slots || slot >= SF_MAX_POTION_SLOTS)
        return SF_EINVAL;
    int p = c->potions[slot];
    if (!potion_can_use(c, p))
        return SF_EINVAL;
    if (potion_needs_target(p) && !combat_alive(c, target))
        return SF_EINVAL;
    c->potions[slot] = POTION_NONE;
    c->potions_used++;
    /* onUsePotion right after the potion's use(); Smoke Bomb's use() only
     * starts the escape, and the fight ends (endBattle: Meat on the Bone,
     * Burning Blood) after Toy Ornithopter's queued heal */
    if (p == POTION_SMOKE_BOMB)
        relics_on_potion_used(c);
    sf_potions[p].use(c, sf_potions[p].potency, target);
    if (p != POTION_SMOKE_BOMB)
        relics_on_potion_used(c);
    if (c->phase == PH_CHOICE || c->pending.active)
        return SF_OK; /* resumed by play_choose() */
    potion_after_choice(c);
    return SF_OK;
}

void potion_after_choice(sf_combat *c) {
    combat_drain(c); /* Juggernaut after a Block Potion, Evolve after a draw */
    combat_check_end(c);
}
