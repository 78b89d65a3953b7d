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
        default: break;
        }
    }
    relics_on_hp_change(c); /* Red Skull's battle-start check */
}

/* atTurnStart (every turn, the first included; Lantern's first-turn energy
 * is in play_first_turn). Energy gains are queued behind the turn's energy
 * recharge, so they add on top of it. */
void relics_at_turn_start(sf_combat *c) {
    for (int i = 0; i < c->relic_n; i++) {
        switch (c->relics[i]) {
        case RELIC_HAPPY_FLOWER:
            if (++c->relic_counter[i] >= 3) {
                c->relic_counter[i] = 0;
                c->energy++;
            }
            break;
        default: break;
        }
    }
}

void relics_on_player_end_turn(sf_combat *c) {
    if (combat_has_relic(c, RELIC_ORICHALCUM) && c->block == 0)
        combat_gain_block(c, 6);
}

/* After an Attack resolves: Pen Nib, Kunai, Shuriken, Ornamental Fan. */
void relics_on_attack_played(sf_combat *c) {
    for (int i = 0; i < c->relic_n; i++) {
        switch (c->relics[i]) {
        case RELIC_PEN_NIB:
            if (++c->relic_counter[i] >= 10)
                c->relic_counter[i] = 0;
            else if (c->relic_counter[i] == 9)
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
        default: break;
        }
    }
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
    combat_drain(c); /* Juggernaut after a Block Potion, Evolve after a draw */
    combat_check_end(c);
    return SF_OK;
}
