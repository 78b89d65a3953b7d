/*
 * run.c — starting positions: an Act-1 run prefix played by the game's
 * reward rules before a labelled fight (engine.h "Starting positions").
 *
 * Rules: docs/game-rules.md §11 (card rewards, potions, relics, rest sites
 * and shops, the map), §6 (encounter lists). What is modelled, what is
 * simplified and why: docs/starts.md. Content is data: the card pools, the
 * relic and potion lists, the map model and the greedy pick table are the
 * tables below.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* ------------------------------------------------------------------------
 * Card pools (§11 "Card rewards"), in the game's index order
 * ---------------------------------------------------------------------- */

static const uint8_t pool_common[] = {CARD_ANGER,
                                      CARD_CLEAVE,
                                      CARD_WARCRY,
                                      CARD_FLEX,
                                      CARD_IRON_WAVE,
                                      CARD_BODY_SLAM,
                                      CARD_TRUE_GRIT,
                                      CARD_SHRUG_IT_OFF,
                                      CARD_CLASH,
                                      CARD_THUNDERCLAP,
                                      CARD_POMMEL_STRIKE,
                                      CARD_TWIN_STRIKE,
                                      CARD_CLOTHESLINE,
                                      CARD_ARMAMENTS,
                                      CARD_HAVOC,
                                      CARD_HEADBUTT,
                                      CARD_WILD_STRIKE,
                                      CARD_HEAVY_BLADE,
                                      CARD_PERFECTED_STRIKE,
                                      CARD_SWORD_BOOMERANG};
static const uint8_t pool_uncommon[] = {
    CARD_SPOT_WEAKNESS,   CARD_INFLAME,         CARD_POWER_THROUGH, CARD_DUAL_WIELD,
    CARD_INFERNAL_BLADE,  CARD_RECKLESS_CHARGE, CARD_HEMOKINESIS,   CARD_INTIMIDATE,
    CARD_BLOOD_FOR_BLOOD, CARD_FLAME_BARRIER,   CARD_PUMMEL,        CARD_BURNING_PACT,
    CARD_METALLICIZE,     CARD_SHOCKWAVE,       CARD_RAMPAGE,       CARD_SEVER_SOUL,
    CARD_WHIRLWIND,       CARD_COMBUST,         CARD_DARK_EMBRACE,  CARD_SEEING_RED,
    CARD_DISARM,          CARD_FEEL_NO_PAIN,    CARD_RAGE,          CARD_ENTRENCH,
    CARD_SENTINEL,        CARD_BATTLE_TRANCE,   CARD_SEARING_BLOW,  CARD_SECOND_WIND,
    CARD_RUPTURE,         CARD_BLOODLETTING,    CARD_CARNAGE,       CARD_DROPKICK,
    CARD_FIRE_BREATHING,  CARD_GHOSTLY_ARMOR,   CARD_UPPERCUT,      CARD_EVOLVE};
static const uint8_t pool_rare[] = {
    CARD_IMMOLATE,   CARD_OFFERING,   CARD_EXHUME,     CARD_REAPER,
    CARD_BRUTALITY,  CARD_JUGGERNAUT, CARD_IMPERVIOUS, CARD_BERSERK,
    CARD_FIEND_FIRE, CARD_BARRICADE,  CARD_CORRUPTION, CARD_LIMIT_BREAK,
    CARD_FEED,       CARD_BLUDGEON,   CARD_DEMON_FORM, CARD_DOUBLE_TAP};

_Static_assert(sizeof pool_common == 20 && sizeof pool_uncommon == 36 && sizeof pool_rare == 16,
               "§11: the Ironclad pools hold 20 / 36 / 16 cards");
_Static_assert(CARD_COUNT <= SF_PICK_CARDS, "sf_pick_table has a row per card id");

const uint8_t *run_card_pool(int rarity, int *n) {
    switch (rarity) {
    case RAR_COMMON: *n = (int)sizeof pool_common; return pool_common;
    case RAR_UNCOMMON: *n = (int)sizeof pool_uncommon; return pool_uncommon;
    case RAR_RARE: *n = (int)sizeof pool_rare; return pool_rare;
    default: *n = 0; return NULL;
    }
}

/* ------------------------------------------------------------------------
 * Run-level relics (§11 "Relics"): Burning Blood, then the Ironclad common,
 * uncommon and rare pools. `engine` is the engine's relic id (0: not
 * modelled, no effect in a fight). `pickup` is an effect on obtaining the
 * relic that needs no fight rules (relics/<Name>.onEquip in G).
 * ---------------------------------------------------------------------- */

enum { TIER_STARTER = 0, TIER_COMMON = 1, TIER_UNCOMMON = 2, TIER_RARE = 3 };
enum {
    PICKUP_NONE = 0,
    PICKUP_MAX_HP,      /* Strawberry, Pear, Mango: +amount max HP and HP */
    PICKUP_GOLD,        /* Old Coin: +amount gold                         */
    PICKUP_UPGRADE_ATK, /* Whetstone: upgrade 2 random Attacks            */
    PICKUP_UPGRADE_SKL, /* War Paint: upgrade 2 random Skills             */
};

/* What a relic does during the prefix and when it may be drawn: `fx` is
 * its effect on the run (its class in G, docs/starts.md "Relics in the
 * prefix"); `spawn` and `floor_max` are its canSpawn: a condition on the
 * player, and the last floor it may be drawn on (0: any). */
enum {
    FX_NONE = 0,
    FX_EGG_ATTACK,      /* MoltenEgg2: Attacks obtained come upgraded           */
    FX_EGG_SKILL,       /* ToxicEgg2: Skills                                    */
    FX_EGG_POWER,       /* FrozenEgg2: Powers                                   */
    FX_SINGING_BOWL,    /* SingingBowlButton: +2 max HP instead of a card       */
    FX_QUESTION_CARD,   /* QuestionCard.changeNumberOfCardsInReward: +1 card    */
    FX_DREAM_CATCHER,   /* CampfireSleepEffect: a card reward after resting     */
    FX_ETERNAL_FEATHER, /* EternalFeather.onEnterRoom: heal deck / 5 * 3        */
    FX_MEAL_TICKET,     /* MealTicket.justEnteredRoom: heal 15 in a shop        */
    FX_REGAL_PILLOW,    /* CampfireSleepEffect: rest heals 15 more              */
    FX_SMILING_MASK,    /* ShopScreen: removal costs 50                         */
    FX_COURIER,         /* ShopScreen.applyDiscount(0.8, true)                  */
    FX_MAW_BANK,        /* MawBank: +12 gold a room until gold is spent in shop */
    FX_CERAMIC_FISH,    /* CeramicFish.onObtainCard: +9 gold                    */
    FX_JUZU,            /* EventHelper.roll: no fight in a "?"                  */
    FX_TINY_CHEST,      /* EventHelper.roll: every 4th "?" is a chest           */
    FX_MATRYOSHKA,      /* Matryoshka.onChestOpen: 2 more chest relics          */
    FX_PEACE_PIPE,      /* TokeOption: rest site, remove a card                 */
    FX_SHOVEL,          /* DigOption: rest site, a relic                        */
    FX_GIRYA,           /* LiftOption: rest site, +1 Strength, 3 times          */
    FX_TEA_SET,         /* AncientTeaSet.onEnterRestRoom: charged               */
    FX_BOTTLE_ATTACK,   /* BottledFlame.onEquip: bottle an Attack               */
    FX_BOTTLE_SKILL,    /* BottledLightning: a Skill                            */
    FX_BOTTLE_POWER,    /* BottledTornado: a Power                              */
    FX_PRAYER_WHEEL,    /* a second card reward after a monster fight           */
    FX_WHITE_BEAST,     /* AbstractRoom.addPotionToRewards: chance 100          */
    FX_CURSE_WARD,      /* Omamori: negates curses; the prefix has none         */
    FX_CURSE_HP,        /* DarkstonePeriapt: +6 max HP a curse; none            */
    FX_WING_BOOTS,      /* WingBoots: fly off the path; the model has one path  */
    FX_POTION_BELT,     /* PotionBelt.onEquip: potionSlots += 2                 */
};
enum {
    SPAWN_ANY = 0,
    SPAWN_NO_SHOP,  /* not drawn in a shop room (never one in the prefix)         */
    SPAWN_CAMPFIRE, /* fewer than 2 of Peace Pipe, Shovel and Girya held          */
    SPAWN_ATTACK,   /* BottledFlame.canSpawn: a non-basic Attack in the deck      */
    SPAWN_SKILL,    /* BottledLightning.canSpawn: a non-basic Skill in the deck   */
    SPAWN_POWER,    /* BottledTornado.canSpawn (CardHelper.hasCardType): a Power  */
};

typedef struct run_relic_def {
    const char *name;
    uint8_t tier, engine, pickup;
    int16_t amount;
    uint8_t fx, spawn, floor_max;
} run_relic_def;

static const run_relic_def run_relics[] = {
    {"(none)", 0, 0, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Burning Blood", TIER_STARTER, RELIC_BURNING_BLOOD, 0, 0, FX_NONE, SPAWN_ANY, 0},
    /* common: combat */
    {"Boot", TIER_COMMON, RELIC_BOOT, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Blood Vial", TIER_COMMON, RELIC_BLOOD_VIAL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Pen Nib", TIER_COMMON, RELIC_PEN_NIB, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Akabeko", TIER_COMMON, RELIC_AKABEKO, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Lantern", TIER_COMMON, RELIC_LANTERN, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bag of Preparation", TIER_COMMON, RELIC_BAG_OF_PREPARATION, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Ancient Tea Set", TIER_COMMON, RELIC_ANCIENT_TEA_SET, 0, 0, FX_TEA_SET, SPAWN_ANY, 48},
    {"Preserved Insect", TIER_COMMON, RELIC_PRESERVED_INSECT, 0, 0, FX_NONE, SPAWN_ANY, 52},
    {"Art of War", TIER_COMMON, RELIC_ART_OF_WAR, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Vajra", TIER_COMMON, RELIC_VAJRA, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Centennial Puzzle", TIER_COMMON, RELIC_CENTENNIAL_PUZZLE, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Happy Flower", TIER_COMMON, RELIC_HAPPY_FLOWER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Oddly Smooth Stone", TIER_COMMON, RELIC_ODDLY_SMOOTH_STONE, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bronze Scales", TIER_COMMON, RELIC_BRONZE_SCALES, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Nunchaku", TIER_COMMON, RELIC_NUNCHAKU, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Orichalcum", TIER_COMMON, RELIC_ORICHALCUM, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Anchor", TIER_COMMON, RELIC_ANCHOR, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bag of Marbles", TIER_COMMON, RELIC_BAG_OF_MARBLES, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Red Skull", TIER_COMMON, RELIC_RED_SKULL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    /* common: other */
    {"Whetstone", TIER_COMMON, 0, PICKUP_UPGRADE_ATK, 2, FX_NONE, SPAWN_ANY, 0},
    {"Meal Ticket", TIER_COMMON, 0, 0, 0, FX_MEAL_TICKET, SPAWN_ANY, 48},
    {"Regal Pillow", TIER_COMMON, 0, 0, 0, FX_REGAL_PILLOW, SPAWN_ANY, 48},
    {"Smiling Mask", TIER_COMMON, 0, 0, 0, FX_SMILING_MASK, SPAWN_NO_SHOP, 48},
    {"Potion Belt", TIER_COMMON, 0, 0, 0, FX_POTION_BELT, SPAWN_ANY, 48},
    {"Omamori", TIER_COMMON, 0, 0, 0, FX_CURSE_WARD, SPAWN_ANY, 48},
    {"Maw Bank", TIER_COMMON, 0, 0, 0, FX_MAW_BANK, SPAWN_NO_SHOP, 48},
    {"Toy Ornithopter", TIER_COMMON, RELIC_TOY_ORNITHOPTER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Ceramic Fish", TIER_COMMON, 0, 0, 0, FX_CERAMIC_FISH, SPAWN_ANY, 48},
    {"Strawberry", TIER_COMMON, 0, PICKUP_MAX_HP, 7, FX_NONE, SPAWN_ANY, 0},
    {"War Paint", TIER_COMMON, 0, PICKUP_UPGRADE_SKL, 2, FX_NONE, SPAWN_ANY, 0},
    {"Juzu Bracelet", TIER_COMMON, 0, 0, 0, FX_JUZU, SPAWN_ANY, 48},
    {"Dream Catcher", TIER_COMMON, 0, 0, 0, FX_DREAM_CATCHER, SPAWN_ANY, 48},
    {"Tiny Chest", TIER_COMMON, 0, 0, 0, FX_TINY_CHEST, SPAWN_ANY, 35},
    /* uncommon: combat */
    {"Bottled Tornado", TIER_UNCOMMON, RELIC_BOTTLED_TORNADO, 0, 0, FX_BOTTLE_POWER, SPAWN_POWER,
     0},
    {"Sundial", TIER_UNCOMMON, RELIC_SUNDIAL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Kunai", TIER_UNCOMMON, RELIC_KUNAI, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Blue Candle", TIER_UNCOMMON, RELIC_BLUE_CANDLE, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Strike Dummy", TIER_UNCOMMON, RELIC_STRIKE_DUMMY, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Ink Bottle", TIER_UNCOMMON, RELIC_INK_BOTTLE, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Ornamental Fan", TIER_UNCOMMON, RELIC_ORNAMENTAL_FAN, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bottled Lightning", TIER_UNCOMMON, RELIC_BOTTLED_LIGHTNING, 0, 0, FX_BOTTLE_SKILL,
     SPAWN_SKILL, 0},
    {"Gremlin Horn", TIER_UNCOMMON, RELIC_GREMLIN_HORN, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Horn Cleat", TIER_UNCOMMON, RELIC_HORN_CLEAT, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Letter Opener", TIER_UNCOMMON, RELIC_LETTER_OPENER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bottled Flame", TIER_UNCOMMON, RELIC_BOTTLED_FLAME, 0, 0, FX_BOTTLE_ATTACK, SPAWN_ATTACK, 0},
    {"Shuriken", TIER_UNCOMMON, RELIC_SHURIKEN, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Meat on the Bone", TIER_UNCOMMON, RELIC_MEAT_ON_THE_BONE, 0, 0, FX_NONE, SPAWN_ANY, 48},
    {"Mummified Hand", TIER_UNCOMMON, RELIC_MUMMIFIED_HAND, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Pantograph", TIER_UNCOMMON, RELIC_PANTOGRAPH, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Mercury Hourglass", TIER_UNCOMMON, RELIC_MERCURY_HOURGLASS, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Self-Forming Clay", TIER_UNCOMMON, RELIC_SELF_FORMING_CLAY, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Paper Phrog", TIER_UNCOMMON, RELIC_PAPER_PHROG, 0, 0, FX_NONE, SPAWN_ANY, 0},
    /* uncommon: other */
    {"Pear", TIER_UNCOMMON, 0, PICKUP_MAX_HP, 10, FX_NONE, SPAWN_ANY, 0},
    {"Eternal Feather", TIER_UNCOMMON, 0, 0, 0, FX_ETERNAL_FEATHER, SPAWN_ANY, 0},
    {"Singing Bowl", TIER_UNCOMMON, 0, 0, 0, FX_SINGING_BOWL, SPAWN_ANY, 48},
    {"Matryoshka", TIER_UNCOMMON, 0, 0, 0, FX_MATRYOSHKA, SPAWN_ANY, 40},
    {"Courier", TIER_UNCOMMON, 0, 0, 0, FX_COURIER, SPAWN_NO_SHOP, 48},
    {"Frozen Egg", TIER_UNCOMMON, 0, 0, 0, FX_EGG_POWER, SPAWN_ANY, 48},
    {"Toxic Egg", TIER_UNCOMMON, 0, 0, 0, FX_EGG_SKILL, SPAWN_ANY, 48},
    {"Question Card", TIER_UNCOMMON, 0, 0, 0, FX_QUESTION_CARD, SPAWN_ANY, 48},
    {"Molten Egg", TIER_UNCOMMON, 0, 0, 0, FX_EGG_ATTACK, SPAWN_ANY, 48},
    {"Darkstone Periapt", TIER_UNCOMMON, 0, 0, 0, FX_CURSE_HP, SPAWN_ANY, 48},
    {"White Beast Statue", TIER_UNCOMMON, 0, 0, 0, FX_WHITE_BEAST, SPAWN_ANY, 0},
    /* rare: combat */
    {"Ginger", TIER_RARE, RELIC_GINGER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Bird-Faced Urn", TIER_RARE, RELIC_BIRD_FACED_URN, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Unceasing Top", TIER_RARE, RELIC_UNCEASING_TOP, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Torii", TIER_RARE, RELIC_TORII, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Stone Calendar", TIER_RARE, RELIC_STONE_CALENDAR, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Thread and Needle", TIER_RARE, RELIC_THREAD_AND_NEEDLE, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Turnip", TIER_RARE, RELIC_TURNIP, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Ice Cream", TIER_RARE, RELIC_ICE_CREAM, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Calipers", TIER_RARE, RELIC_CALIPERS, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Lizard Tail", TIER_RARE, RELIC_LIZARD_TAIL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Girya", TIER_RARE, RELIC_GIRYA, 0, 0, FX_GIRYA, SPAWN_CAMPFIRE, 47},
    {"Dead Branch", TIER_RARE, RELIC_DEAD_BRANCH, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Du-Vu Doll", TIER_RARE, RELIC_DU_VU_DOLL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Pocketwatch", TIER_RARE, RELIC_POCKETWATCH, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Incense Burner", TIER_RARE, RELIC_INCENSE_BURNER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Gambling Chip", TIER_RARE, RELIC_GAMBLING_CHIP, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Captain's Wheel", TIER_RARE, RELIC_CAPTAINS_WHEEL, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Fossilized Helix", TIER_RARE, RELIC_FOSSILIZED_HELIX, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Tungsten Rod", TIER_RARE, RELIC_TUNGSTEN_ROD, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Magic Flower", TIER_RARE, RELIC_MAGIC_FLOWER, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Charon's Ashes", TIER_RARE, RELIC_CHARONS_ASHES, 0, 0, FX_NONE, SPAWN_ANY, 0},
    {"Champion Belt", TIER_RARE, RELIC_CHAMPION_BELT, 0, 0, FX_NONE, SPAWN_ANY, 0},
    /* rare: other */
    {"Old Coin", TIER_RARE, 0, PICKUP_GOLD, 300, FX_NONE, SPAWN_NO_SHOP, 48},
    {"Shovel", TIER_RARE, 0, 0, 0, FX_SHOVEL, SPAWN_CAMPFIRE, 47},
    {"Wing Boots", TIER_RARE, 0, 0, 0, FX_WING_BOOTS, SPAWN_ANY, 40},
    {"Prayer Wheel", TIER_RARE, 0, 0, 0, FX_PRAYER_WHEEL, SPAWN_ANY, 48},
    {"Mango", TIER_RARE, 0, PICKUP_MAX_HP, 14, FX_NONE, SPAWN_ANY, 0},
    {"Peace Pipe", TIER_RARE, 0, 0, 0, FX_PEACE_PIPE, SPAWN_CAMPFIRE, 47},
};

enum { RUN_RELICS = (int)(sizeof run_relics / sizeof run_relics[0]) };
enum { POOL_C_FIRST = 2, POOL_C_N = 33, POOL_U_N = 30, POOL_R_N = 28 };
_Static_assert(RUN_RELICS == 2 + POOL_C_N + POOL_U_N + POOL_R_N,
               "§11: the Ironclad relic pools hold 33 / 30 / 28 relics");
_Static_assert(RUN_RELICS < 256, "run relic ids fit a byte");
_Static_assert((int)POOL_C_N <= (int)RUN_POOL_MAX && (int)POOL_U_N <= (int)RUN_POOL_MAX &&
                   (int)POOL_R_N <= (int)RUN_POOL_MAX,
               "run_pools holds every pool");

/* ------------------------------------------------------------------------
 * Run-level potions (§11 "Potions"): the Ironclad list in getPotions order
 * (G: helpers/PotionHelper.getPotions); rarity 1 common, 2 uncommon, 3 rare.
 * ---------------------------------------------------------------------- */

typedef struct run_potion_def {
    const char *name;
    uint8_t rarity, engine;
} run_potion_def;

static const run_potion_def run_potions[] = {
    {"(empty)", 0, 0},
    {"Blood Potion", 1, POTION_BLOOD},
    {"Elixir", 2, POTION_ELIXIR},
    {"Heart of Iron", 3, POTION_HEART_OF_IRON},
    {"Block Potion", 1, POTION_BLOCK},
    {"Dexterity Potion", 1, POTION_DEXTERITY},
    {"Energy Potion", 1, POTION_ENERGY},
    {"Explosive Potion", 1, POTION_EXPLOSIVE},
    {"Fire Potion", 1, POTION_FIRE},
    {"Strength Potion", 1, POTION_STRENGTH},
    {"Swift Potion", 1, POTION_SWIFT},
    {"Weak Potion", 1, POTION_WEAK},
    {"Fear Potion", 1, POTION_FEAR},
    {"Attack Potion", 1, POTION_ATTACK},
    {"Skill Potion", 1, POTION_SKILL},
    {"Power Potion", 1, POTION_POWER},
    {"Colorless Potion", 1, POTION_COLORLESS},
    {"Flex Potion", 1, POTION_FLEX},
    {"Speed Potion", 1, POTION_SPEED},
    {"Blessing of the Forge", 1, POTION_BLESSING_OF_THE_FORGE},
    {"Regen Potion", 2, POTION_REGEN},
    {"Ancient Potion", 2, POTION_ANCIENT},
    {"Liquid Bronze", 2, POTION_LIQUID_BRONZE},
    {"Gambler's Brew", 2, POTION_GAMBLERS_BREW},
    {"Essence of Steel", 2, POTION_ESSENCE_OF_STEEL},
    {"Duplication Potion", 2, POTION_DUPLICATION},
    {"Distilled Chaos", 2, POTION_DISTILLED_CHAOS},
    {"Liquid Memories", 2, POTION_LIQUID_MEMORIES},
    {"Cultist Potion", 3, POTION_CULTIST},
    {"Fruit Juice", 3, POTION_FRUIT_JUICE},
    {"Snecko Oil", 3, POTION_SNECKO_OIL},
    {"Fairy in a Bottle", 3, POTION_FAIRY},
    {"Smoke Bomb", 3, POTION_SMOKE_BOMB},
    {"Entropic Brew", 3, POTION_ENTROPIC_BREW},
};

enum { RUN_POTIONS = (int)(sizeof run_potions / sizeof run_potions[0]) };
_Static_assert(RUN_POTIONS == 34, "§11: the Ironclad potion list holds 33 potions");

int sf_run_relic_count(void) {
    return RUN_RELICS;
}
const char *sf_run_relic_name(int item) {
    return item >= 0 && item < RUN_RELICS ? run_relics[item].name : NULL;
}
int sf_run_relic_lookup(const char *name) {
    for (int i = 1; i < RUN_RELICS; i++)
        if (name && engine_name_eq(name, run_relics[i].name))
            return i;
    return SF_ENOTFOUND;
}
int sf_run_relic_engine(int item) {
    return item > 0 && item < RUN_RELICS && run_relics[item].engine ? run_relics[item].engine
                                                                    : SF_ENOTFOUND;
}
int sf_run_relic_modelled(int item) {
    if (item <= 0 || item >= RUN_RELICS)
        return 0;
    const run_relic_def *d = &run_relics[item];
    return d->engine || d->pickup || d->fx != FX_NONE;
}
int sf_run_potion_count(void) {
    return RUN_POTIONS;
}
const char *sf_run_potion_name(int item) {
    return item >= 0 && item < RUN_POTIONS ? run_potions[item].name : NULL;
}
int sf_run_potion_lookup(const char *name) {
    for (int i = 1; i < RUN_POTIONS; i++)
        if (name && engine_name_eq(name, run_potions[i].name))
            return i;
    return SF_ENOTFOUND;
}
int sf_run_potion_engine(int item) {
    return item > 0 && item < RUN_POTIONS && run_potions[item].engine ? run_potions[item].engine
                                                                      : SF_ENOTFOUND;
}
int run_potion_rarity(int item) {
    return item > 0 && item < RUN_POTIONS ? run_potions[item].rarity : 0;
}
int run_relic_tier(int item) {
    return item > 0 && item < RUN_RELICS ? run_relics[item].tier : -1;
}

static int run_relic_counter_engine(int item);

/* The run-level id of an engine relic (every engine relic is in the list). */
static int run_relic_of_engine(int relic) {
    for (int i = 1; i < RUN_RELICS; i++)
        if (run_relics[i].engine == relic)
            return i;
    return 0;
}

/* ------------------------------------------------------------------------
 * The greedy pick table (data; values are this project's judgement of Act-1
 * Ironclad cards: front-loaded damage, block and scaling that pays off in
 * short fights score high)
 * ---------------------------------------------------------------------- */

typedef struct pick_row {
    uint8_t card, take, smith;
} pick_row;

static const pick_row pick_rows[] = {
    {CARD_STRIKE, 5, 15},
    {CARD_DEFEND, 10, 15},
    {CARD_BASH, 40, 70},
    /* common */
    {CARD_ANGER, 52, 30},
    {CARD_ARMAMENTS, 45, 65},
    {CARD_BODY_SLAM, 30, 50},
    {CARD_CLASH, 30, 30},
    {CARD_CLEAVE, 58, 35},
    {CARD_CLOTHESLINE, 52, 30},
    {CARD_FLEX, 35, 35},
    {CARD_HAVOC, 30, 40},
    {CARD_HEADBUTT, 55, 35},
    {CARD_HEAVY_BLADE, 48, 45},
    {CARD_IRON_WAVE, 50, 30},
    {CARD_PERFECTED_STRIKE, 50, 35},
    {CARD_POMMEL_STRIKE, 68, 45},
    {CARD_SHRUG_IT_OFF, 70, 55},
    {CARD_SWORD_BOOMERANG, 48, 35},
    {CARD_THUNDERCLAP, 60, 45},
    {CARD_TRUE_GRIT, 48, 45},
    {CARD_TWIN_STRIKE, 58, 35},
    {CARD_WARCRY, 30, 30},
    {CARD_WILD_STRIKE, 45, 35},
    /* uncommon */
    {CARD_BATTLE_TRANCE, 62, 40},
    {CARD_BLOOD_FOR_BLOOD, 45, 40},
    {CARD_BLOODLETTING, 45, 35},
    {CARD_BURNING_PACT, 45, 35},
    {CARD_CARNAGE, 70, 55},
    {CARD_COMBUST, 50, 40},
    {CARD_DARK_EMBRACE, 40, 50},
    {CARD_DISARM, 70, 45},
    {CARD_DROPKICK, 42, 35},
    {CARD_DUAL_WIELD, 30, 35},
    {CARD_ENTRENCH, 20, 40},
    {CARD_EVOLVE, 25, 30},
    {CARD_FEEL_NO_PAIN, 52, 40},
    {CARD_FIRE_BREATHING, 38, 35},
    {CARD_FLAME_BARRIER, 62, 45},
    {CARD_GHOSTLY_ARMOR, 50, 35},
    {CARD_HEMOKINESIS, 65, 45},
    {CARD_INFERNAL_BLADE, 35, 50},
    {CARD_INFLAME, 72, 60},
    {CARD_INTIMIDATE, 50, 35},
    {CARD_METALLICIZE, 55, 40},
    {CARD_POWER_THROUGH, 52, 40},
    {CARD_PUMMEL, 48, 40},
    {CARD_RAGE, 35, 35},
    {CARD_RAMPAGE, 40, 40},
    {CARD_RECKLESS_CHARGE, 38, 35},
    {CARD_RUPTURE, 30, 35},
    {CARD_SEARING_BLOW, 35, 60},
    {CARD_SECOND_WIND, 42, 35},
    {CARD_SEEING_RED, 50, 50},
    {CARD_SENTINEL, 38, 35},
    {CARD_SEVER_SOUL, 45, 40},
    {CARD_SHOCKWAVE, 72, 50},
    {CARD_SPOT_WEAKNESS, 50, 40},
    {CARD_UPPERCUT, 68, 55},
    {CARD_WHIRLWIND, 60, 45},
    /* rare */
    {CARD_BARRICADE, 45, 55},
    {CARD_BERSERK, 45, 40},
    {CARD_BLUDGEON, 78, 55},
    {CARD_BRUTALITY, 40, 40},
    {CARD_CORRUPTION, 55, 60},
    {CARD_DEMON_FORM, 75, 55},
    {CARD_DOUBLE_TAP, 50, 45},
    {CARD_EXHUME, 30, 40},
    {CARD_FEED, 70, 45},
    {CARD_FIEND_FIRE, 60, 40},
    {CARD_IMMOLATE, 82, 50},
    {CARD_IMPERVIOUS, 72, 45},
    {CARD_JUGGERNAUT, 55, 40},
    {CARD_LIMIT_BREAK, 40, 60},
    {CARD_OFFERING, 80, 55},
    {CARD_REAPER, 62, 40},
};

void sf_pick_table_default(sf_pick_table *t) {
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < sizeof pick_rows / sizeof pick_rows[0]; i++) {
        t->take[pick_rows[i].card] = pick_rows[i].take;
        t->smith[pick_rows[i].card] = pick_rows[i].smith;
    }
    t->skip_below = 40;
    t->copy_penalty = 12;
    t->rest_below = 50;
    t->rest_below_boss = 85;
    t->remove_below = 20;
}

static const char *const start_names[] = {"starter", "rewards"};
static const char *const picker_names[] = {"random", "greedy", "callback"};

const char *sf_start_kind_name(int start) {
    return start >= 0 && start < 2 ? start_names[start] : NULL;
}
int sf_start_kind_lookup(const char *name) {
    for (int i = 0; i < 2; i++)
        if (name && strcmp(name, start_names[i]) == 0)
            return i;
    return SF_ENOTFOUND;
}
const char *sf_picker_name(int picker) {
    return picker >= 0 && picker < 3 ? picker_names[picker] : NULL;
}
int sf_picker_lookup(const char *name) {
    for (int i = 0; i < 3; i++)
        if (name && strcmp(name, picker_names[i]) == 0)
            return i;
    return SF_ENOTFOUND;
}

void sf_start_opts_default(sf_start_opts *o) {
    memset(o, 0, sizeof *o);
    o->start = SF_START_STARTER;
    o->picker = SF_PICK_GREEDY;
}

/* ------------------------------------------------------------------------
 * Reward rules (§11), each on its own stream
 * ---------------------------------------------------------------------- */

/* AbstractDungeon.getRewardCards for one reward: n_cards cards (3, 4 with
 * Question Card), each with a
 * rarity roll cardRng.random(99) + b (normal: rare < 3, uncommon < 40;
 * elite: < 10, < 50), b updated after each roll (common: b - 1, not below
 * -40; rare: b = 5), the card pool.get(cardRng.random(size - 1)) drawn
 * again while it repeats one already in the reward; then each non-rare card
 * spends one randomBoolean(0.0) upgrade roll (Exordium's chance). */
void run_card_reward_n(sf_rng *card_rng, int *b, int elite, int n_cards, sf_card_spec *out) {
    for (int i = 0; i < n_cards; i++) {
        int roll = sf_rng_random(card_rng, 99) + *b;
        int rarity = roll < (elite ? 10 : 3)    ? RAR_RARE
                     : roll < (elite ? 50 : 40) ? RAR_UNCOMMON
                                                : RAR_COMMON;
        if (rarity == RAR_RARE) {
            *b = 5;
        } else if (rarity == RAR_COMMON) {
            *b -= 1;
            if (*b <= -40)
                *b = -40;
        }
        int n;
        const uint8_t *pool = run_card_pool(rarity, &n);
        int id, dupe;
        do {
            id = pool[sf_rng_random(card_rng, n - 1)];
            dupe = 0;
            for (int j = 0; j < i; j++)
                dupe |= out[j].id == id;
        } while (dupe);
        out[i] = (sf_card_spec){(uint8_t)id, 0};
    }
    for (int i = 0; i < n_cards; i++)
        if (sf_cards[out[i].id].rarity != RAR_RARE &&
            sf_rng_random_bool_p(card_rng, RUN_UPGRADE_CHANCE) &&
            (out[i].upgrades == 0 || (sf_cards[out[i].id].flags & CD_MULTI_UPGRADE)))
            out[i].upgrades++;
}

void run_card_reward(sf_rng *card_rng, int *b, int elite, sf_card_spec out[3]) {
    run_card_reward_n(card_rng, b, elite, 3, out);
}

/* AbstractRoom.addPotionToRewards and AbstractDungeon.returnRandomPotion:
 * chance 40 + M (0 when `no_chance`: every monster escaped); the roll
 * potionRng.random(0, 99) < chance drops a potion and lowers M by 10,
 * otherwise M rises by 10; the rarity potionRng.random(0, 99) (< 65 common,
 * < 90 uncommon, else rare), then potionRng.random(32) over the list until
 * the rarity matches. Returns the run potion id, or 0 for no drop. */
int run_potion_drop(sf_rng *potion_rng, int *m, int no_chance) {
    return run_potion_drop_chance(potion_rng, m, no_chance ? 0 : 40 + *m);
}

int run_potion_drop_chance(sf_rng *potion_rng, int *m, int chance) {
    if (sf_rng_random_range(potion_rng, 0, 99) >= chance) {
        *m += 10;
        return 0;
    }
    *m -= 10;
    int r = sf_rng_random_range(potion_rng, 0, 99);
    int rarity = r < 65 ? 1 : r < 90 ? 2 : 3;
    for (;;) {
        int item = 1 + sf_rng_random(potion_rng, RUN_POTIONS - 2);
        if (run_potions[item].rarity == rarity)
            return item;
    }
}

/* MonsterRoomElite.returnRandomRelicTier: relicRng.random(0, 99): 0-49
 * common, 50-82 uncommon, 83-99 rare. */
int run_elite_relic_tier(sf_rng *relic_rng) {
    int r = sf_rng_random_range(relic_rng, 0, 99);
    return r < 50 ? TIER_COMMON : r < 83 ? TIER_UNCOMMON : TIER_RARE;
}

/* CampfireSleepEffect: (int)(maxHP * 0.3f). */
int run_rest_heal(int max_hp) {
    return (int)((float)max_hp * 0.3f);
}

/* ------------------------------------------------------------------------
 * The map model (docs/starts.md "The path"): one path's room per floor,
 * matched to the [sim] statistics of §11.
 * ---------------------------------------------------------------------- */

enum { FLOORS = 15, BOSS_FLOOR = RUN_BOSS_FLOOR };

/* [sim]: paths with 0 / 1 / 2 / 3 elites, percent. */
static const uint8_t map_elite_count_pct[4] = {21, 52, 24, 3};
/* [sim]: floor 6 is an elite on 36 % of paths, a rest site on 52 %. */
enum { MAP_F6_ELITE_PCT = 36, MAP_F6_REST_PCT = 52 };
/* Floors that may hold an elite after floor 6 (not 9: treasure; not 15: rest). */
static const uint8_t map_late_floors[] = {7, 8, 10, 11, 12, 13, 14};
/* Weights of the rooms left free, fitted so that a path averages 6.7
 * monster rooms, 0.6 "?" fights, 1.5 rest sites besides floor 15 (the
 * quotas' 0.12 : 0.05 : 0.22 rest : shop : event ratio) and 0.7 shops. */
typedef struct map_weights {
    uint8_t monster, event, shop, rest;
} map_weights;
static const map_weights map_early = {60, 31, 9, 0}; /* floors 2-6: no rest (§11)  */
static const map_weights map_late = {48, 25, 5, 22}; /* floors 7-14 (14: no rest)  */

/* The "?" chances of EventHelper (monster, shop, chest), carried over the act. */
typedef struct event_chances {
    float monster, shop, treasure;
} event_chances;

/* The run's state while the prefix is played. */
typedef struct run {
    const sf_start_opts *opts;
    sf_pick_table table;
    sf_fight_spec p; /* the player: deck (sorted), modelled relics and potions, HP, gold */
    int relics_n;
    uint8_t relics[SF_MAX_RELICS];        /* run relic ids, pickup order        */
    int16_t ctr[SF_MAX_RELICS];           /* their counters (AbstractRelic.counter) */
    int8_t spec_slot[SF_MAX_RELICS];      /* their slot in p.relics, or -1      */
    uint8_t potions[SF_MAX_POTION_SLOTS]; /* run potion ids by slot (p.potion_slots) */
    /* tag[i]: the bottle holding p.deck[i] (FX_BOTTLE_*), or 0; a tagged card
     * sorts first among its equal copies */
    uint8_t tag[SF_MAX_DECK];
    int b, m, removals;
    int floor; /* the floor being played                                      */
    event_chances ev;
    sf_rng map, event, card, potion, relic, treasure, misc;
    uint64_t pick_rng, policy_seed, fight_seed;
    act1_lists lists;
    int normal_i, elite_i;
    run_pools pools;               /* the shuffled relic pools */
    uint8_t rooms[BOSS_FLOOR + 1]; /* ROOM_* by floor, "?" resolved         */
    char path[BOSS_FLOOR + 1];
    sf_start_desc stats;
} run;

static int rng_below(sf_rng *r, int n) {
    return n <= 1 ? 0 : sf_rng_random(r, n - 1);
}

static int weighted(sf_rng *r, const int *w, int n) {
    int total = 0;
    for (int i = 0; i < n; i++)
        total += w[i];
    int x = rng_below(r, total);
    for (int i = 0; i < n; i++) {
        if (x < w[i])
            return i;
        x -= w[i];
    }
    return n - 1;
}

/* Draw the path's room types for floors 1..15 (16 is the boss). */
static void plan_path(sf_rng *map, uint8_t t[RUN_BOSS_FLOOR + 1]) {
    memset(t, 0, RUN_BOSS_FLOOR + 1);
    t[1] = ROOM_MONSTER;
    t[9] = ROOM_TREASURE;
    t[15] = ROOM_REST;
    t[BOSS_FLOOR] = ROOM_BOSS;
    int w4[4] = {map_elite_count_pct[0], map_elite_count_pct[1], map_elite_count_pct[2],
                 map_elite_count_pct[3]};
    int k = weighted(map, w4, 4);
    /* P(elite on 6 | at least one elite) = 36 / 79, so P(elite on 6) = 36 %. */
    if (k > 0 && rng_below(map, 100 - map_elite_count_pct[0]) < MAP_F6_ELITE_PCT) {
        t[6] = ROOM_ELITE;
        k--;
    }
    /* The other elites on distinct late floors, never two in a row. */
    const int nl = (int)sizeof map_late_floors;
    for (;;) {
        uint8_t pick[sizeof map_late_floors];
        memcpy(pick, map_late_floors, sizeof pick);
        for (int i = 0; i < k; i++) {
            int j = i + rng_below(map, nl - i);
            uint8_t x = pick[i];
            pick[i] = pick[j];
            pick[j] = x;
        }
        int ok = 1;
        for (int i = 0; i < k && ok; i++)
            for (int j = 0; j < k; j++)
                ok &= pick[i] + 1 != pick[j];
        for (int i = 0; i < k && ok; i++)
            ok &= !(pick[i] == 7 && t[6] == ROOM_ELITE);
        if (!ok)
            continue;
        for (int i = 0; i < k; i++)
            t[pick[i]] = ROOM_ELITE;
        break;
    }
    /* P(rest on 6 | no elite on 6) = 52 / 64. */
    if (t[6] == ROOM_NONE && rng_below(map, 100 - MAP_F6_ELITE_PCT) < MAP_F6_REST_PCT)
        t[6] = ROOM_REST;
    for (int f = 2; f <= 14; f++) {
        if (t[f] != ROOM_NONE)
            continue;
        const map_weights *mw = f <= 6 ? &map_early : &map_late;
        int w[4] = {mw->monster, mw->event, mw->shop, mw->rest};
        static const uint8_t kind[4] = {ROOM_MONSTER, ROOM_EVENT, ROOM_SHOP, ROOM_REST};
        /* no rest site on floor 14; a rest site or shop never next to its own kind */
        if (f == 14)
            w[3] = 0;
        for (int i = 2; i < 4; i++)
            if (t[f - 1] == kind[i] || t[f + 1] == kind[i])
                w[i] = 0;
        t[f] = kind[weighted(map, w, 4)];
    }
}

static const event_chances event_chances_start = {0.1f, 0.03f, 0.02f};

/* EventHelper.roll for one "?" (eventRng, one float): a fight, shop or chest
 * with the growing chances of §11, else an event (ROOM_EVENT); no shop right
 * after a shop. With Tiny Chest (`tiny_chest`: its counter) every 4th "?"
 * is a chest; with Juzu Bracelet (`juzu`) a fight becomes an event, the
 * chances moving as for a fight. */
static int event_roll(sf_rng *event, event_chances *ch, int after_shop, int16_t *tiny_chest,
                      int juzu) {
    float roll = sf_rng_random_float(event);
    int force_chest = 0;
    if (tiny_chest && ++*tiny_chest == 4) {
        *tiny_chest = 0;
        force_chest = 1;
    }
    int ms = (int)(ch->monster * 100.0f);
    int ss = after_shop ? 0 : (int)(ch->shop * 100.0f);
    int ts = (int)(ch->treasure * 100.0f);
    int x = (int)(roll * 100.0f);
    int res = x < ms             ? ROOM_MONSTER
              : x < ms + ss      ? ROOM_SHOP
              : x < ms + ss + ts ? ROOM_TREASURE
                                 : ROOM_EVENT;
    if (force_chest)
        res = ROOM_TREASURE;
    if (res == ROOM_MONSTER) {
        ch->monster = 0.1f;
        if (juzu)
            res = ROOM_EVENT;
    } else {
        ch->monster += 0.1f;
    }
    ch->shop = res == ROOM_SHOP ? 0.03f : ch->shop + 0.03f;
    ch->treasure = res == ROOM_TREASURE ? 0.02f : ch->treasure + 0.02f;
    return res;
}

static const char room_letter[] = " MER$T?B"; /* by ROOM_* */

static char event_letter(int res) {
    return res == ROOM_MONSTER ? 'm' : res == ROOM_SHOP ? 's' : res == ROOM_TREASURE ? 't' : '?';
}

/* Each "?" in floor order, with no relic that changes the roll; letters for
 * desc. */
static void resolve_events(sf_rng *event, uint8_t rooms[RUN_BOSS_FLOOR + 1],
                           char path[RUN_BOSS_FLOOR + 1]) {
    event_chances ch = event_chances_start;
    for (int f = 1; f <= BOSS_FLOOR; f++) {
        path[f - 1] = room_letter[rooms[f]];
        if (rooms[f] != ROOM_EVENT)
            continue;
        int res = event_roll(event, &ch, rooms[f - 1] == ROOM_SHOP, NULL, 0);
        rooms[f] = (uint8_t)(res == ROOM_EVENT ? ROOM_NONE : res);
        path[f - 1] = event_letter(res);
    }
    path[BOSS_FLOOR] = '\0';
}

void run_path_sample(sf_rng *map, sf_rng *event, uint8_t rooms[RUN_BOSS_FLOOR + 1],
                     char path[RUN_BOSS_FLOOR + 1]) {
    plan_path(map, rooms);
    resolve_events(event, rooms, path);
}

/* ------------------------------------------------------------------------
 * The player's deck, relics and potions
 * ---------------------------------------------------------------------- */

static int card_cmp(sf_card_spec a, sf_card_spec b) {
    return a.id != b.id ? a.id - b.id : a.upgrades - b.upgrades;
}

static void deck_sort(sf_fight_spec *p) {
    for (int i = 1; i < p->deck_n; i++) {
        sf_card_spec k = p->deck[i];
        int j = i - 1;
        while (j >= 0 && card_cmp(p->deck[j], k) > 0) {
            p->deck[j + 1] = p->deck[j];
            j--;
        }
        p->deck[j + 1] = k;
    }
}

static int can_upgrade(sf_card_spec c) {
    return c.upgrades == 0 || ((sf_cards[c.id].flags & CD_MULTI_UPGRADE) && c.upgrades < 15);
}

static int deck_copies(const sf_fight_spec *p, int id) {
    int n = 0;
    for (int i = 0; i < p->deck_n; i++)
        n += p->deck[i].id == id;
    return n;
}

/* The distinct cards of the deck (sorted, so equal cards are adjacent),
 * those that pass `upgradable` when it is set. */
static int distinct_cards(const sf_fight_spec *p, int upgradable, sf_card_spec *out) {
    int n = 0;
    for (int i = 0; i < p->deck_n; i++) {
        if (upgradable && !can_upgrade(p->deck[i]))
            continue;
        if (n > 0 && card_cmp(out[n - 1], p->deck[i]) == 0)
            continue;
        out[n++] = p->deck[i];
    }
    return n;
}

/* The index of the first of `relics` with effect `fx`, or -1. */
static int held_in(const uint8_t *relics, int n, int fx) {
    for (int i = 0; i < n; i++)
        if (run_relics[relics[i]].fx == fx)
            return i;
    return -1;
}

/* The relic slot of the first relic held with effect `fx`, or -1. */
static int held(const run *r, int fx) {
    return held_in(r->relics, r->relics_n, fx);
}

static int is_bottle(int fx) {
    return fx == FX_BOTTLE_ATTACK || fx == FX_BOTTLE_SKILL || fx == FX_BOTTLE_POWER;
}

static int bottle_type(int fx) {
    return fx == FX_BOTTLE_ATTACK ? CT_ATTACK : fx == FX_BOTTLE_SKILL ? CT_SKILL : CT_POWER;
}

/* Set relic slot `slot`'s counter, in the spec too when the engine models
 * the relic. */
static void ctr_set(run *r, int slot, int v) {
    r->ctr[slot] = (int16_t)v;
    if (r->spec_slot[slot] >= 0)
        r->p.relic_counters[r->spec_slot[slot]] = v;
}

/* After any change of the deck: sort it with its tags (by card; a bottled
 * card first among its equal copies), then give each bottle the counter
 * 1 + the index of its card in the sorted deck (0: no card). */
static void deck_changed(run *r) {
    sf_fight_spec *p = &r->p;
    for (int i = 1; i < p->deck_n; i++) {
        sf_card_spec k = p->deck[i];
        uint8_t t = r->tag[i];
        int j = i - 1;
        for (; j >= 0; j--) {
            int c = card_cmp(p->deck[j], k);
            if (c < 0 || (c == 0 && (!t || r->tag[j])))
                break;
            p->deck[j + 1] = p->deck[j];
            r->tag[j + 1] = r->tag[j];
        }
        p->deck[j + 1] = k;
        r->tag[j + 1] = t;
    }
    for (int s = 0; s < r->relics_n; s++) {
        int fx = run_relics[r->relics[s]].fx;
        if (!is_bottle(fx))
            continue;
        int v = 0;
        for (int i = 0; i < p->deck_n && !v; i++)
            if (r->tag[i] == fx)
                v = i + 1;
        ctr_set(r, s, v);
    }
}

/* The distinct cards a shop or Peace Pipe may remove: those with a copy no
 * bottle holds (CardGroup.getGroupWithoutBottledCards). */
static int removable_cards(const run *r, sf_card_spec *out) {
    int n = 0;
    for (int i = 0; i < r->p.deck_n; i++) {
        if (r->tag[i] || (n > 0 && card_cmp(out[n - 1], r->p.deck[i]) == 0))
            continue;
        out[n++] = r->p.deck[i];
    }
    return n;
}

/* Smith a copy of `c`: one no bottle holds when there is one. */
static void deck_upgrade(run *r, sf_card_spec c) {
    int at = -1;
    for (int i = 0; i < r->p.deck_n; i++)
        if (card_cmp(r->p.deck[i], c) == 0 && (at < 0 || (r->tag[at] && !r->tag[i])))
            at = i;
    if (at >= 0)
        r->p.deck[at].upgrades++;
    deck_changed(r);
}

/* Remove a copy of `c` that no bottle holds. */
static void deck_remove(run *r, sf_card_spec c) {
    sf_fight_spec *p = &r->p;
    for (int i = 0; i < p->deck_n; i++)
        if (!r->tag[i] && card_cmp(p->deck[i], c) == 0) {
            size_t rest = (size_t)(p->deck_n - i - 1);
            memmove(&p->deck[i], &p->deck[i + 1], sizeof p->deck[0] * rest);
            memmove(&r->tag[i], &r->tag[i + 1], rest);
            p->deck_n--;
            memset(&p->deck[p->deck_n], 0, sizeof p->deck[0]);
            r->tag[p->deck_n] = 0;
            break;
        }
    deck_changed(r);
}

/* The egg of the card's type upgrades it when held (MoltenEgg2, ToxicEgg2,
 * FrozenEgg2 onPreviewObtainCard / onObtainCard: an upgradable card not yet
 * upgraded). */
static sf_card_spec egg(const run *r, sf_card_spec c) {
    int type = sf_cards[c.id].type;
    int fx = type == CT_ATTACK  ? FX_EGG_ATTACK
             : type == CT_SKILL ? FX_EGG_SKILL
             : type == CT_POWER ? FX_EGG_POWER
                                : FX_NONE;
    if (fx != FX_NONE && c.upgrades == 0 && held(r, fx) >= 0)
        c.upgrades = 1;
    return c;
}

/* Add a card to the deck (the eggs; Ceramic Fish's onObtainCard +9 gold). */
static void obtain_card(run *r, sf_card_spec c) {
    if (r->p.deck_n >= SF_MAX_DECK)
        return;
    r->tag[r->p.deck_n] = 0;
    r->p.deck[r->p.deck_n++] = egg(r, c);
    if (held(r, FX_CERAMIC_FISH) >= 0)
        r->p.gold += 9;
    deck_changed(r);
}

static void heal(run *r, int amount) {
    r->p.hp = r->p.hp + amount > r->p.max_hp ? r->p.max_hp : r->p.hp + amount;
}

/* Whetstone / War Paint: upgrade `n` random upgradable cards of `type`,
 * chosen as Collections.shuffle(list, new Random(miscRng.randomLong())). */
static void upgrade_random(run *r, int type, int n) {
    int idx[SF_MAX_DECK], k = 0;
    for (int i = 0; i < r->p.deck_n; i++)
        if (sf_cards[r->p.deck[i].id].type == type && can_upgrade(r->p.deck[i]))
            idx[k++] = i;
    sf_jrand j;
    sf_jrand_seed(&j, sf_rng_random_long(&r->misc));
    for (int i = k; i > 1; i--) {
        int s = sf_jrand_next_int(&j, i);
        int t = idx[i - 1];
        idx[i - 1] = idx[s];
        idx[s] = t;
    }
    for (int i = 0; i < n && i < k; i++)
        r->p.deck[idx[i]].upgrades++;
    deck_changed(r);
}

/* relics/<Name>.canSpawn (internal.h): floor limits; the campfire relics;
 * the Bottled relics' card. */
int run_relic_can_spawn(int item, const sf_fight_spec *player, const uint8_t *relics, int relics_n,
                        int floor) {
    if (item <= 0 || item >= RUN_RELICS)
        return 0;
    const run_relic_def *k = &run_relics[item];
    if (k->floor_max && floor > k->floor_max)
        return 0;
    switch (k->spawn) {
    case SPAWN_CAMPFIRE:
        return (held_in(relics, relics_n, FX_PEACE_PIPE) >= 0) +
                   (held_in(relics, relics_n, FX_SHOVEL) >= 0) +
                   (held_in(relics, relics_n, FX_GIRYA) >= 0) <
               2;
    case SPAWN_ATTACK:
    case SPAWN_SKILL:
    case SPAWN_POWER: {
        int type = k->spawn == SPAWN_ATTACK  ? CT_ATTACK
                   : k->spawn == SPAWN_SKILL ? CT_SKILL
                                             : CT_POWER;
        for (int i = 0; i < player->deck_n; i++) {
            const card_def *d = &sf_cards[player->deck[i].id];
            if (d->type == type && (k->spawn == SPAWN_POWER || d->rarity != RAR_BASIC))
                return 1;
        }
        return 0;
    }
    /* SPAWN_NO_SHOP: the prefix draws relics in fights, chests and rest
     * sites, never in a shop */
    default: return 1;
    }
}

/* AbstractDungeon.returnRandomRelicKey (internal.h): the front of the
 * tier's pool (an empty pool gives the next tier's); a relic that cannot
 * spawn is dropped and returnEndRandomRelicKey takes the back of the same
 * pool instead, until one can (an empty pool: the next tier's front
 * again). 0 when the rare pool is empty too (the game's Circlet, not a run
 * relic). */
int run_take_relic(run_pools *pools, int tier, const sf_fight_spec *player, const uint8_t *relics,
                   int relics_n, int floor) {
    int from_end = 0;
    if (tier < TIER_COMMON)
        tier = TIER_COMMON;
    for (;;) {
        while (tier <= TIER_RARE && pools->n[tier] == 0) {
            tier++;
            from_end = 0;
        }
        if (tier > TIER_RARE)
            return 0;
        uint8_t *pool = pools->item[tier];
        int n = pools->n[tier];
        int item;
        if (from_end) {
            item = pool[n - 1];
        } else {
            item = pool[0];
            memmove(&pool[0], &pool[1], (size_t)(n - 1));
        }
        pools->n[tier]--;
        if (run_relic_can_spawn(item, player, relics, relics_n, floor))
            return item;
        from_end = 1;
    }
}

static int take_relic(run *r, int tier) {
    return run_take_relic(&r->pools, tier, &r->p, r->relics, r->relics_n, r->floor);
}

/* Take `item` out of the pools (a relic the player already holds). */
static void pool_remove(run *r, int item) {
    run_pools *pl = &r->pools;
    for (int t = TIER_COMMON; t <= TIER_RARE; t++)
        for (int i = 0; i < pl->n[t]; i++)
            if (pl->item[t][i] == item) {
                memmove(&pl->item[t][i], &pl->item[t][i + 1], (size_t)(pl->n[t] - i - 1));
                pl->n[t]--;
                return;
            }
}

/* AbstractDungeon.initializeRelicList: each pool shuffled with
 * java.util.Random(relicRng.randomLong()), in the order common, uncommon,
 * rare, shop, boss (the last two are not used in Act 1 before the boss,
 * but their draws are made). */
static void init_relic_pools(run *r) {
    static const int first[4] = {0, POOL_C_FIRST, POOL_C_FIRST + POOL_C_N,
                                 POOL_C_FIRST + POOL_C_N + POOL_U_N};
    static const int count[4] = {0, POOL_C_N, POOL_U_N, POOL_R_N};
    for (int tier = TIER_COMMON; tier <= TIER_RARE; tier++) {
        int n = count[tier];
        uint8_t *pool = r->pools.item[tier];
        for (int i = 0; i < n; i++)
            pool[i] = (uint8_t)(first[tier] + i);
        sf_jrand j;
        sf_jrand_seed(&j, sf_rng_random_long(&r->relic));
        for (int i = n; i > 1; i--) {
            int k = sf_jrand_next_int(&j, i);
            uint8_t t = pool[i - 1];
            pool[i - 1] = pool[k];
            pool[k] = t;
        }
        r->pools.n[tier] = n;
    }
    sf_rng_random_long(&r->relic); /* shop pool */
    sf_rng_random_long(&r->relic); /* boss pool */
}

/* The potion slots the player has: 3, or 5 with Potion Belt. */
static int run_slots(const run *r) {
    return r->p.potion_slots ? r->p.potion_slots : SF_POTION_SLOTS;
}

static void obtain_potion(run *r, int item) {
    if (item <= 0)
        return;
    r->stats.potions_dropped++;
    for (int i = 0; i < run_slots(r); i++)
        if (r->potions[i] == 0) {
            r->potions[i] = (uint8_t)item;
            r->p.potions[i] = run_potions[item].engine;
            return;
        }
    r->stats.potions_wasted++; /* every slot full: the potion is left behind */
}

/* ------------------------------------------------------------------------
 * Pickers
 * ---------------------------------------------------------------------- */

static int draw_below(uint64_t *rng, int n) {
    uint64_t x = sf_mix64(*rng += 0x9E3779B97F4A7C15ull);
    int k = (int)((double)(x >> 11) * 0x1.0p-53 * n);
    return k < n ? k : n - 1;
}

static int pick_random(const sf_start_choice *c, uint64_t *rng) {
    switch (c->kind) {
    case SF_CHOICE_REMOVE: /* buy a removal or not, then which card */
        return draw_below(rng, 2) ? draw_below(rng, c->n_options) : c->n_options;
    default: return draw_below(rng, c->n_options + (c->can_skip ? 1 : 0) + (c->bowl ? 1 : 0));
    }
}

static int take_worth(const sf_pick_table *t, int card) {
    return t->take[card];
}

/* The option of `kind` in a rest-site choice, or -1. */
static int rest_option(const sf_start_choice *c, int kind) {
    for (int i = 0; i < c->n_options; i++)
        if (c->rest[i] == kind)
            return i;
    return -1;
}

static int pick_greedy(const sf_pick_table *t, const sf_start_choice *c) {
    const sf_fight_spec *p = c->player;
    switch (c->kind) {
    case SF_CHOICE_CARD: {
        int best = -1, best_v = 0;
        for (int i = 0; i < c->n_options; i++) {
            int v = t->take[c->cards[i].id] - t->copy_penalty * deck_copies(p, c->cards[i].id);
            if (best < 0 || v > best_v)
                best = i, best_v = v;
        }
        if (best >= 0 && best_v >= t->skip_below)
            return best;
        return c->bowl ? c->n_options + 1 : c->n_options; /* +2 max HP beats nothing */
    }
    case SF_CHOICE_REST: {
        int below = c->before_boss ? t->rest_below_boss : t->rest_below;
        if (p->hp * 100 < below * p->max_hp)
            return 0;
        /* Not hurt: lift, else dig, else smith, else toke when a card is
         * worth removing, else rest. */
        int worst = 100;
        for (int i = 0; i < p->deck_n; i++)
            worst = take_worth(t, p->deck[i].id) < worst ? take_worth(t, p->deck[i].id) : worst;
        static const int order[] = {SF_REST_LIFT, SF_REST_DIG, SF_REST_SMITH, SF_REST_TOKE};
        for (int o = 0; o < 4; o++) {
            int k = rest_option(c, order[o]);
            if (k >= 0 && (order[o] != SF_REST_TOKE || worst < t->remove_below))
                return k;
        }
        return 0;
    }
    case SF_CHOICE_SMITH: {
        int best = 0;
        for (int i = 1; i < c->n_options; i++)
            if (t->smith[c->cards[i].id] > t->smith[c->cards[best].id])
                best = i;
        return best;
    }
    case SF_CHOICE_BOTTLE: {
        int best = 0;
        for (int i = 1; i < c->n_options; i++)
            if (t->take[c->cards[i].id] > t->take[c->cards[best].id])
                best = i;
        return best;
    }
    case SF_CHOICE_REMOVE:
    case SF_CHOICE_TOKE: {
        int worst = 0;
        for (int i = 1; i < c->n_options; i++)
            if (t->take[c->cards[i].id] < t->take[c->cards[worst].id])
                worst = i;
        if (c->kind == SF_CHOICE_TOKE)
            return worst;
        return c->n_options > 0 && t->take[c->cards[worst].id] < t->remove_below ? worst
                                                                                 : c->n_options;
    }
    default: return 0;
    }
}

/* Ask the picker; checks its answer. */
static int ask(run *r, sf_start_choice *c, sf_err *err) {
    c->player = &r->p;
    int k;
    switch (r->opts->picker) {
    case SF_PICK_RANDOM: k = pick_random(c, &r->pick_rng); break;
    case SF_PICK_GREEDY: k = pick_greedy(&r->table, c); break;
    default:
        k = r->opts->pick(r->opts->pick_ctx, c, &r->pick_rng);
        if (k < 0)
            return sf_err_set(err, k, "start: the picker failed on floor %d (%s)", c->floor,
                              sf_strerror(k));
        break;
    }
    if (k < 0 || k > c->n_options + (c->bowl ? 1 : 0) || (k == c->n_options && !c->can_skip))
        return sf_err_set(err, SF_EINVAL, "start: picker answered option %d of %d%s%s on floor %d",
                          k, c->n_options, c->can_skip ? " (+ skip)" : "",
                          c->bowl ? " (+ Singing Bowl)" : "", c->floor);
    return k;
}

/* ------------------------------------------------------------------------
 * Relics
 * ---------------------------------------------------------------------- */

/* Bottled Flame / Lightning / Tornado onEquip: the player picks one of the
 * deck's Attacks / Skills / Powers (getPurgeableCards().getAttacks() etc.:
 * basic cards included; the relic's canSpawn only asks for a non-basic one
 * to exist); the bottle holds it. */
static int bottle(run *r, int slot, int fx, sf_err *err) {
    sf_start_choice c;
    memset(&c, 0, sizeof c);
    c.kind = SF_CHOICE_BOTTLE;
    c.floor = r->floor;
    c.relic = r->relics[slot];
    int type = bottle_type(fx);
    for (int i = 0; i < r->p.deck_n; i++)
        if (sf_cards[r->p.deck[i].id].type == type &&
            (c.n_options == 0 || card_cmp(c.cards[c.n_options - 1], r->p.deck[i]) != 0))
            c.cards[c.n_options++] = r->p.deck[i];
    if (c.n_options == 0)
        return SF_OK;
    int k = ask(r, &c, err);
    if (k < 0)
        return k;
    for (int i = 0; i < r->p.deck_n; i++)
        if (!r->tag[i] && card_cmp(r->p.deck[i], c.cards[k]) == 0) {
            r->tag[i] = (uint8_t)fx;
            break;
        }
    deck_changed(r);
    return SF_OK;
}

/* A relic joins the player: its slot, its spec slot when the engine models
 * it, its starting counter (the class's constructor / onEquip). Returns the
 * slot, or -1 when the relic slots are full. */
static int relic_add(run *r, int item) {
    if (item <= 0 || r->relics_n >= SF_MAX_RELICS)
        return -1;
    const run_relic_def *d = &run_relics[item];
    int s = r->relics_n++;
    r->relics[s] = (uint8_t)item;
    r->ctr[s] = 0;
    r->spec_slot[s] = -1;
    if (d->engine && r->p.relics_n < SF_MAX_RELICS) {
        r->spec_slot[s] = (int8_t)r->p.relics_n;
        r->p.relic_counters[r->p.relics_n] = 0;
        r->p.relics[r->p.relics_n++] = d->engine;
    }
    switch (run_relics[item].fx) {
    case FX_MATRYOSHKA: /* Matryoshka(): counter 2 */
    case FX_CURSE_WARD: /* Omamori(): counter 2 */ ctr_set(r, s, 2); break;
    case FX_MAW_BANK: ctr_set(r, s, 1); break; /* 1 until used up */
    case FX_POTION_BELT: r->p.potion_slots = SF_MAX_POTION_SLOTS; break;
    default: break;
    }
    return s;
}

static int obtain_relic(run *r, int item, sf_err *err) {
    int s = relic_add(r, item);
    if (s < 0)
        return SF_OK;
    const run_relic_def *d = &run_relics[item];
    switch (d->pickup) {
    case PICKUP_MAX_HP:
        r->p.max_hp += d->amount;
        r->p.hp += d->amount;
        break;
    case PICKUP_GOLD: r->p.gold += d->amount; break;
    case PICKUP_UPGRADE_ATK: upgrade_random(r, CT_ATTACK, d->amount); break;
    case PICKUP_UPGRADE_SKL: upgrade_random(r, CT_SKILL, d->amount); break;
    default: break;
    }
    int fx = run_relics[item].fx;
    return is_bottle(fx) ? bottle(r, s, fx, err) : SF_OK;
}

/* ------------------------------------------------------------------------
 * Rooms
 * ---------------------------------------------------------------------- */

enum { PREFIX_MAX_PLIES = 5000 };

/* Play one prefix fight with the heuristic; returns 1 won, 0 lost, < 0 error. */
static int play_fight(run *r, int encounter, int floor, int *escaped, sf_err *err) {
    sf_fight_spec spec = r->p;
    spec.encounter = encounter;
    spec.floor = floor;
    spec.seed = r->fight_seed;
    spec.ascension = r->opts->ascension;
    sf_state st;
    int rc = sf_engine_init(&st, &spec, err);
    if (rc < 0) {
        if (err)
            sf_err_prefix(err, "start: floor %d fight", floor);
        return rc;
    }
    uint64_t rng = sf_seed_derive(r->policy_seed, (uint64_t)floor, 0, 0);
    for (int ply = 0; ply < PREFIX_MAX_PLIES && !sf_engine_is_terminal(&st); ply++) {
        sf_action a;
        if (sf_engine_heuristic_action(&st, 0.0, &rng, &a) < 0 || sf_engine_apply(&st, a, NULL) < 0)
            return sf_err_set(err, SF_ESTATE, "start: floor %d fight: no legal action", floor);
    }
    sf_outcome o;
    sf_engine_outcome(&st, &o);
    if (!o.over || !o.won || o.engine_limit)
        return 0;
    const sf_combat *c = ccombat_of(&st);
    *escaped = (c->flags & FL_ESCAPED_ALL) != 0;
    sf_engine_carry_over(&st, NULL, floor - 1, &r->p);
    /* a potion the fight used (Fairy in a Bottle) leaves its slot */
    for (int i = 0; i < run_slots(r); i++)
        if (r->potions[i] && run_potions[r->potions[i]].engine && r->p.potions[i] == 0)
            r->potions[i] = 0;
    /* the counters the fight kept (Pen Nib, Lizard Tail, ...) are the run's;
     * Ancient Tea Set's charge is spent on the fight's first turn
     * (AncientTeaSet.atTurnStart), modelled or not; a bottle keeps its card */
    for (int s = 0; s < r->relics_n; s++)
        if (r->spec_slot[s] >= 0)
            r->ctr[s] = (int16_t)r->p.relic_counters[r->spec_slot[s]];
    int tea = held(r, FX_TEA_SET);
    if (tea >= 0)
        ctr_set(r, tea, 0);
    deck_changed(r);
    r->stats.fights++;
    return 1;
}

/* One card reward (AbstractDungeon.getRewardCards and CardRewardScreen):
 * 3 cards, 4 with Question Card, each upgraded by the egg of its type
 * (onPreviewObtainCard); the picker takes one, skips, or with Singing Bowl
 * takes +2 max HP (SingingBowlButton: increaseMaxHp(2, true)). */
static int card_reward(run *r, int elite, int floor, sf_err *err) {
    sf_start_choice c;
    memset(&c, 0, sizeof c);
    c.kind = SF_CHOICE_CARD;
    c.n_options = held(r, FX_QUESTION_CARD) >= 0 ? 4 : 3;
    c.can_skip = 1;
    c.bowl = held(r, FX_SINGING_BOWL) >= 0;
    c.floor = floor;
    c.elite = elite;
    run_card_reward_n(&r->card, &r->b, elite, c.n_options, c.cards);
    for (int i = 0; i < c.n_options; i++)
        c.cards[i] = egg(r, c.cards[i]);
    int k = ask(r, &c, err);
    if (k < 0)
        return k;
    if (k < c.n_options && r->p.deck_n < SF_MAX_DECK) {
        obtain_card(r, c.cards[k]);
        r->stats.cards_taken++;
    } else if (k == c.n_options + 1) {
        r->p.max_hp += 2;
        r->p.hp += 2;
        r->stats.bowls++;
    } else {
        r->stats.cards_skipped++;
    }
    return SF_OK;
}

/* A won fight's rewards in the game's order: gold, relic, potion (chance
 * 100 with White Beast Statue), cards (a second reward with Prayer Wheel
 * after a monster fight, not an elite). */
static int fight_rewards(run *r, int elite, int escaped, int floor, sf_err *err) {
    if (elite)
        r->p.gold += sf_rng_random_range(&r->treasure, 25, 35);
    else if (!escaped)
        r->p.gold += sf_rng_random_range(&r->treasure, 10, 20);
    if (elite) {
        int rc = obtain_relic(r, take_relic(r, run_elite_relic_tier(&r->relic)), err);
        if (rc < 0)
            return rc;
    }
    int chance = held(r, FX_WHITE_BEAST) >= 0 ? 100 : !elite && escaped ? 0 : 40 + r->m;
    obtain_potion(r, run_potion_drop_chance(&r->potion, &r->m, chance));
    int rc = card_reward(r, elite, floor, err);
    if (rc >= 0 && !elite && held(r, FX_PRAYER_WHEEL) >= 0)
        rc = card_reward(r, 0, floor, err);
    return rc;
}

static int rest_site(run *r, int floor, sf_err *err) {
    sf_start_choice c;
    memset(&c, 0, sizeof c);
    c.kind = SF_CHOICE_REST;
    c.floor = floor;
    c.before_boss = floor == FLOORS;
    sf_card_spec up[SF_MAX_DECK], rm[SF_MAX_DECK];
    int nu = distinct_cards(&r->p, 1, up);
    int nr = removable_cards(r, rm);
    /* CampfireUI: Rest, Smith, then each relic's option in relic order */
    int n = 0, girya = -1;
    c.rest[n++] = SF_REST_HEAL;
    if (nu > 0)
        c.rest[n++] = SF_REST_SMITH;
    for (int s = 0; s < r->relics_n && n < SF_REST_OPTIONS; s++)
        switch (run_relics[r->relics[s]].fx) {
        case FX_GIRYA: /* LiftOption(counter < 3) */
            if (r->ctr[s] < 3)
                c.rest[n++] = SF_REST_LIFT, girya = s;
            break;
        case FX_PEACE_PIPE: /* TokeOption: a removable card */
            if (nr > 0)
                c.rest[n++] = SF_REST_TOKE;
            break;
        case FX_SHOVEL: c.rest[n++] = SF_REST_DIG; break;
        default: break;
        }
    c.n_options = n;
    int k = ask(r, &c, err);
    if (k < 0)
        return k;
    switch (c.rest[k]) {
    case SF_REST_HEAL:
        /* CampfireSleepEffect: (int)(maxHP * 0.3f), + 15 with Regal Pillow;
         * then Dream Catcher's card reward (getRewardCards in a rest room) */
        heal(r, run_rest_heal(r->p.max_hp) + (held(r, FX_REGAL_PILLOW) >= 0 ? 15 : 0));
        r->stats.rests++;
        return held(r, FX_DREAM_CATCHER) >= 0 ? card_reward(r, 0, floor, err) : SF_OK;
    case SF_REST_SMITH:
        memset(&c, 0, sizeof c);
        c.kind = SF_CHOICE_SMITH;
        c.floor = floor;
        c.n_options = nu;
        memcpy(c.cards, up, sizeof up[0] * (size_t)nu);
        k = ask(r, &c, err);
        if (k < 0)
            return k;
        deck_upgrade(r, c.cards[k]);
        r->stats.smiths++;
        return SF_OK;
    case SF_REST_LIFT: /* CampfireLiftEffect: Girya's counter + 1 */
        ctr_set(r, girya, r->ctr[girya] + 1);
        r->stats.lifts++;
        return SF_OK;
    case SF_REST_TOKE:
        memset(&c, 0, sizeof c);
        c.kind = SF_CHOICE_TOKE;
        c.floor = floor;
        c.n_options = nr;
        memcpy(c.cards, rm, sizeof rm[0] * (size_t)nr);
        k = ask(r, &c, err);
        if (k < 0)
            return k;
        deck_remove(r, c.cards[k]);
        r->stats.tokes++;
        return SF_OK;
    default: /* SF_REST_DIG: a relic of AbstractDungeon.returnRandomRelicTier */
        r->stats.digs++;
        return obtain_relic(r, take_relic(r, run_elite_relic_tier(&r->relic)), err);
    }
}

/* ShopScreen's removal price: purgeCost (75, + 25 a removal), times 0.8
 * rounded with Courier (applyDiscount(0.8f, true)), 50 with Smiling Mask. */
static int removal_price(const run *r) {
    if (held(r, FX_SMILING_MASK) >= 0)
        return 50;
    int price = 75 + 25 * r->removals;
    if (held(r, FX_COURIER) >= 0)
        price = (int)((float)price * 0.8f + 0.5f); /* MathUtils.round */
    return price;
}

static int shop(run *r, int floor, sf_err *err) {
    int price = removal_price(r);
    if (r->p.gold < price)
        return SF_OK;
    sf_start_choice c;
    memset(&c, 0, sizeof c);
    c.kind = SF_CHOICE_REMOVE;
    c.floor = floor;
    c.can_skip = 1;
    c.price = price;
    c.n_options = removable_cards(r, c.cards);
    int k = ask(r, &c, err);
    if (k < 0)
        return k;
    if (k < c.n_options && r->p.deck_n > 1) {
        deck_remove(r, c.cards[k]);
        r->p.gold -= price;
        r->removals++;
        r->stats.removals++;
        int maw = held(r, FX_MAW_BANK); /* MawBank.onSpendGold: used up */
        if (maw >= 0)
            ctr_set(r, maw, 0);
    }
    return SF_OK;
}

/* AbstractDungeon.getRandomChest and the chest's randomizeReward (§11
 * "Chests"): size by treasureRng.random(0, 99), then one roll r for gold
 * (r < G) and tier; on opening, Matryoshka's relic first (onChestOpen:
 * relicRng.randomBoolean(0.75f) common, else uncommon; twice a run), then
 * the gold ±10 % (treasureRng.random(0.9 g, 1.1 g), rounded) and the
 * chest's relic. Both relics are drawn before either is taken. */
static int chest(run *r, sf_err *err) {
    static const struct {
        uint8_t common, uncommon, gold_below, gold;
    } chests[3] = {{75, 25, 50, 25}, {35, 50, 35, 50}, {0, 75, 50, 75}};
    int s = sf_rng_random_range(&r->treasure, 0, 99);
    int size = s < 50 ? 0 : s < 83 ? 1 : 2;
    int roll = sf_rng_random_range(&r->treasure, 0, 99);
    int tier = roll < chests[size].common                           ? TIER_COMMON
               : roll < chests[size].common + chests[size].uncommon ? TIER_UNCOMMON
                                                                    : TIER_RARE;
    int extra = 0, m = held(r, FX_MATRYOSHKA);
    if (m >= 0 && r->ctr[m] > 0) {
        extra = take_relic(r, sf_rng_random_bool_p(&r->relic, 0.75f) ? TIER_COMMON : TIER_UNCOMMON);
        ctr_set(r, m, r->ctr[m] - 1);
    }
    if (roll < chests[size].gold_below) {
        float g = chests[size].gold;
        float amount = 0.9f * g + sf_rng_random_float(&r->treasure) * (1.1f * g - 0.9f * g);
        r->p.gold += (int)(amount + 0.5f);
    }
    int item = take_relic(r, tier);
    int rc = obtain_relic(r, extra, err);
    return rc < 0 ? rc : obtain_relic(r, item, err);
}

/* Entering floor f's room of map kind `kind` (AbstractDungeon.
 * nextRoomTransition): every relic's onEnterRoom sees the map's room (a
 * "?" is still an event room): Maw Bank +12 gold while not used up, Eternal
 * Feather heals deck size / 5 * 3 in a rest site; then a "?" is rolled
 * (Tiny Chest, Juzu Bracelet); then justEnteredRoom sees the room it
 * became: Meal Ticket heals 15 in a shop; RestRoom.onPlayerEntry charges
 * Ancient Tea Set. Returns the room (ROOM_NONE for an event). */
static int enter_room(run *r, int f, int kind) {
    r->floor = f;
    int s = held(r, FX_MAW_BANK);
    if (s >= 0 && r->ctr[s] > 0)
        r->p.gold += 12;
    if (kind == ROOM_REST && held(r, FX_ETERNAL_FEATHER) >= 0)
        heal(r, r->p.deck_n / 5 * 3);
    if (kind == ROOM_EVENT) {
        int tc = held(r, FX_TINY_CHEST);
        kind = event_roll(&r->event, &r->ev, r->rooms[f - 1] == ROOM_SHOP,
                          tc >= 0 ? &r->ctr[tc] : NULL, held(r, FX_JUZU) >= 0);
        r->path[f - 1] = event_letter(kind);
        if (kind == ROOM_EVENT)
            kind = ROOM_NONE;
    } else {
        r->path[f - 1] = room_letter[kind];
    }
    r->rooms[f] = (uint8_t)kind;
    if (kind == ROOM_SHOP && held(r, FX_MEAL_TICKET) >= 0)
        heal(r, 15);
    if (kind == ROOM_REST && (s = held(r, FX_TEA_SET)) >= 0)
        ctr_set(r, s, 1);
    return kind;
}

/* Play floor f's room (entered): 1 when the player lives on, 0 when the
 * fight was lost, < 0 on error. */
static int play_room(run *r, int f, int kind, sf_err *err) {
    switch (kind) {
    case ROOM_MONSTER:
    case ROOM_ELITE: {
        int elite = kind == ROOM_ELITE, escaped = 0;
        if (elite ? r->elite_i >= ACT1_ELITE : r->normal_i >= ACT1_NORMAL)
            return sf_err_set(err, SF_ESTATE, "start: floor %d: the encounter list is spent", f);
        int enc = elite ? r->lists.elite[r->elite_i++] : r->lists.normal[r->normal_i++];
        int rc = play_fight(r, enc, f, &escaped, err);
        if (rc <= 0)
            return rc;
        r->stats.elites += elite;
        rc = fight_rewards(r, elite, escaped, f, err);
        return rc < 0 ? rc : 1;
    }
    case ROOM_REST: {
        int rc = rest_site(r, f, err);
        return rc < 0 ? rc : 1;
    }
    case ROOM_SHOP: {
        int rc = shop(r, f, err);
        return rc < 0 ? rc : 1;
    }
    case ROOM_TREASURE: {
        int rc = chest(r, err);
        return rc < 0 ? rc : 1;
    }
    default: return 1;
    }
}

/* ------------------------------------------------------------------------
 * Sampling
 * ---------------------------------------------------------------------- */

enum {
    ST_MAP = 0,
    ST_EVENT,
    ST_MONSTER,
    ST_CARD,
    ST_POTION,
    ST_RELIC,
    ST_TREASURE,
    ST_MISC,
    ST_PICK,
    ST_FIGHT,
    ST_POLICY,
    ST_COUNT
};

static uint64_t stream_seed(uint64_t run_seed, uint64_t game_seed, int attempt, int stream) {
    return sf_seed_derive(run_seed, game_seed, SF_START_TAG,
                          (uint64_t)attempt * ST_COUNT + (uint64_t)stream);
}

static void run_init(run *r, const sf_start_opts *opts, uint64_t run_seed, uint64_t game_seed,
                     int attempt) {
    memset(r, 0, sizeof *r);
    r->opts = opts;
    if (opts->table)
        r->table = *opts->table;
    else
        sf_pick_table_default(&r->table);
    sf_fight_spec_default(&r->p);
    r->p.ascension = opts->ascension;
    /* Burning Blood, in the default spec's first relic slot */
    r->relics[0] = (uint8_t)run_relic_of_engine(RELIC_BURNING_BLOOD);
    r->spec_slot[0] = 0;
    r->relics_n = 1;
    r->b = 5;
    r->m = 0;
    r->ev = event_chances_start;
    sf_rng_seed(&r->map, stream_seed(run_seed, game_seed, attempt, ST_MAP));
    sf_rng_seed(&r->event, stream_seed(run_seed, game_seed, attempt, ST_EVENT));
    sf_rng_seed(&r->card, stream_seed(run_seed, game_seed, attempt, ST_CARD));
    sf_rng_seed(&r->potion, stream_seed(run_seed, game_seed, attempt, ST_POTION));
    sf_rng_seed(&r->relic, stream_seed(run_seed, game_seed, attempt, ST_RELIC));
    sf_rng_seed(&r->treasure, stream_seed(run_seed, game_seed, attempt, ST_TREASURE));
    sf_rng_seed(&r->misc, stream_seed(run_seed, game_seed, attempt, ST_MISC));
    act1_encounter_lists(stream_seed(run_seed, game_seed, attempt, ST_MONSTER), &r->lists);
    r->pick_rng = stream_seed(run_seed, game_seed, attempt, ST_PICK);
    r->fight_seed = stream_seed(run_seed, game_seed, attempt, ST_FIGHT);
    r->policy_seed = stream_seed(run_seed, game_seed, attempt, ST_POLICY);
    init_relic_pools(r);
}

/* Where the fight falls on the planned path: the floor, or 0 when this
 * path has no such slot (the attempt is then redrawn). Slots are drawn
 * uniformly over a fixed range so that a path with more fights of the
 * class is chosen proportionally more often: every fight of the class that
 * Act 1 paths contain is equally likely. */
static int place_fight(run *r, int cls) {
    enum { WEAK_SLOTS = 3, STRONG_SLOTS = 10, ELITE_SLOTS = 3 };
    if (cls == SF_POOL_BOSS)
        return BOSS_FLOOR;
    int slot = rng_below(&r->map, cls == SF_POOL_WEAK     ? WEAK_SLOTS
                                  : cls == SF_POOL_STRONG ? STRONG_SLOTS
                                                          : ELITE_SLOTS);
    int want = cls == SF_POOL_STRONG ? WEAK_SLOTS + slot : slot;
    int seen = 0;
    for (int f = 1; f <= FLOORS; f++) {
        int kind = r->rooms[f];
        if ((cls == SF_POOL_ELITE) != (kind == ROOM_ELITE) ||
            (kind != ROOM_MONSTER && kind != ROOM_ELITE))
            continue;
        if (seen++ == want)
            return f;
    }
    return 0;
}

/* Whether the room the run entered on the fight's floor is a fight of the
 * class: a "?" placed as a fight may roll otherwise once Juzu Bracelet or
 * Tiny Chest is held, and the monster fights played before it decide
 * whether it is a weak (first 3) or strong one. */
static int target_fits(const run *r, int cls, int kind) {
    switch (cls) {
    case SF_POOL_BOSS: return kind == ROOM_BOSS;
    case SF_POOL_ELITE: return kind == ROOM_ELITE && r->elite_i < ACT1_ELITE;
    case SF_POOL_WEAK: return kind == ROOM_MONSTER && r->normal_i < 3;
    default: return kind == ROOM_MONSTER && r->normal_i >= 3 && r->normal_i < ACT1_NORMAL;
    }
}

static int check_opts(const sf_start_opts *o, int encounter, sf_err *err) {
    if (!o)
        return sf_err_set(err, SF_EINVAL, "start: no options");
    if (o->start != SF_START_STARTER && o->start != SF_START_REWARDS)
        return sf_err_set(err, SF_EINVAL, "start: start %d is not starter (0) or rewards (1)",
                          o->start);
    if (o->picker < SF_PICK_RANDOM || o->picker > SF_PICK_CALLBACK)
        return sf_err_set(err, SF_EINVAL, "start: picker %d is not random, greedy or callback",
                          o->picker);
    if (o->picker == SF_PICK_CALLBACK && !o->pick)
        return sf_err_set(err, SF_EINVAL, "start: picker callback: no pick function");
    if (o->ascension < 0 || o->ascension > SF_MAX_ASCENSION)
        return sf_err_set(err, SF_EUNSUPPORTED, "start: ascension %d is not supported (A0..A%d)",
                          o->ascension, SF_MAX_ASCENSION);
    if (o->max_attempts < 0)
        return sf_err_set(err, SF_EINVAL, "start: max_attempts %d is negative", o->max_attempts);
    if (encounter >= ENC_COUNT || encounter < SF_START_CLASS(SF_POOL_BOSS))
        return sf_err_set(err, SF_EINVAL,
                          "start: encounter %d is neither an encounter id (0..%d) nor "
                          "SF_START_CLASS(pool)",
                          encounter, ENC_COUNT - 1);
    return SF_OK;
}

static void finish(run *r, int cls, int encounter, int floor, sf_fight_spec *out,
                   sf_start_desc *desc) {
    *out = r->p;
    out->encounter = encounter;
    out->floor = floor;
    out->seed = 0;
    out->ascension = r->opts->ascension;
    deck_sort(out);
    if (!desc)
        return;
    *desc = r->stats;
    desc->start = r->opts->start;
    desc->picker = r->opts->picker;
    desc->cls = cls;
    desc->encounter = encounter;
    desc->floor = floor;
    desc->relics_n = r->relics_n;
    memcpy(desc->relics, r->relics, sizeof desc->relics);
    memset(desc->relic_counters, 0, sizeof desc->relic_counters);
    for (int i = 0; i < r->relics_n; i++)
        if (sf_relic_counter_max(run_relic_counter_engine(r->relics[i])))
            desc->relic_counters[i] = r->ctr[i];
    memcpy(desc->potions, r->potions, sizeof desc->potions);
    memset(desc->path, 0, sizeof desc->path);
    if (floor > 0)
        memcpy(desc->path, r->path, (size_t)floor);
    sf_start_format(out, desc, desc->text, sizeof desc->text);
}

int sf_start_sample(const sf_start_opts *opts, uint64_t run_seed, uint64_t game_seed, int encounter,
                    sf_fight_spec *out, sf_start_desc *desc, sf_err *err) {
    int rc = check_opts(opts, encounter, err);
    if (rc < 0)
        return rc;
    int cls = encounter >= 0 ? sf_encounters[encounter].pool : -1 - encounter;
    int max_attempts = opts->max_attempts ? opts->max_attempts : 400;
    run r;
    if (opts->start == SF_START_STARTER) {
        run_init(&r, opts, run_seed, game_seed, 0);
        int enc = encounter >= 0          ? encounter
                  : cls == SF_POOL_WEAK   ? r.lists.normal[0]
                  : cls == SF_POOL_STRONG ? r.lists.normal[3]
                  : cls == SF_POOL_ELITE  ? r.lists.elite[0]
                                          : r.lists.boss;
        r.stats.attempts = 1;
        finish(&r, cls, enc, 0, out, desc);
        return SF_OK;
    }
    int died = 0;
    for (int attempt = 0; attempt < max_attempts; attempt++) {
        run_init(&r, opts, run_seed, game_seed, attempt);
        /* The path as planned: its "?" rolled with no relic (a copy of the
         * event stream) to place the fight; the prefix then rolls each "?"
         * again as it enters it, with the relics it holds by then. */
        uint8_t plan[BOSS_FLOOR + 1];
        plan_path(&r.map, plan);
        memcpy(r.rooms, plan, sizeof plan);
        sf_rng ev = r.event;
        resolve_events(&ev, r.rooms, r.path);
        int target = place_fight(&r, cls);
        if (target == 0)
            continue;
        int alive = 1, fits = 0;
        for (int f = 1; f <= target && alive > 0; f++) {
            int kind = enter_room(&r, f, plan[f]);
            if (f == target) {
                fits = target_fits(&r, cls, kind);
                break;
            }
            alive = play_room(&r, f, kind, err);
            if (alive < 0)
                return alive;
        }
        if (!alive) {
            died++;
            continue;
        }
        if (!fits)
            continue;
        int enc = encounter;
        if (enc < 0)
            enc = cls == SF_POOL_BOSS    ? r.lists.boss
                  : cls == SF_POOL_ELITE ? r.lists.elite[r.elite_i]
                                         : r.lists.normal[r.normal_i];
        r.stats.attempts = attempt + 1;
        r.stats.died = died;
        finish(&r, cls, enc, target, out, desc);
        return SF_OK;
    }
    return sf_err_set(err, SF_ESTATE,
                      "start: no run of %d reached a %s fight alive (picker %s); raise "
                      "max_attempts",
                      max_attempts,
                      cls == SF_POOL_WEAK     ? "weak"
                      : cls == SF_POOL_STRONG ? "strong"
                      : cls == SF_POOL_ELITE  ? "elite"
                                              : "boss",
                      sf_picker_name(opts->picker));
}

/* A scripted prefix (internal.h): the player of `start` (text form) plays
 * `rooms`, one letter a floor from the start's floor + 1 on. */
int run_script(const sf_start_opts *opts, uint64_t run_seed, uint64_t game_seed, const char *start,
               const char *rooms, sf_fight_spec *out, sf_start_desc *desc, sf_err *err) {
    int rc = check_opts(opts, 0, err);
    if (rc < 0)
        return rc;
    run r;
    run_init(&r, opts, run_seed, game_seed, 0);
    sf_fight_spec p = r.p;
    sf_start_desc d;
    memset(&d, 0, sizeof d);
    if ((rc = sf_start_parse(start, &p, &d, err)) < 0)
        return rc;
    memcpy(r.p.deck, p.deck, sizeof p.deck);
    r.p.deck_n = p.deck_n;
    r.p.hp = p.hp;
    r.p.max_hp = p.max_hp;
    r.p.gold = p.gold;
    memcpy(r.p.potions, p.potions, sizeof p.potions);
    memcpy(r.potions, d.potions, sizeof r.potions);
    r.relics_n = 0;
    r.p.relics_n = 0;
    for (int i = 0; i < d.relics_n; i++) {
        int s = relic_add(&r, d.relics[i]);
        pool_remove(&r, d.relics[i]);
        if (s >= 0 && d.relic_counters[i])
            ctr_set(&r, s, d.relic_counters[i]);
        int fx = run_relics[d.relics[i]].fx;
        if (s >= 0 && is_bottle(fx) && r.ctr[s] > 0 && r.ctr[s] <= r.p.deck_n)
            r.tag[r.ctr[s] - 1] = (uint8_t)fx;
    }
    deck_changed(&r);
    int f = p.floor;
    memset(r.path, '-', (size_t)(f < BOSS_FLOOR ? f : BOSS_FLOOR)); /* floors before the script */
    for (const char *c = rooms; *c; c++) {
        const char *at = strchr(room_letter, *c);
        if (!at || *c == ' ' || ++f > BOSS_FLOOR)
            return sf_err_set(err, SF_EINVAL, "start script: room '%c' on floor %d", *c, f);
        int kind = enter_room(&r, f, (int)(at - room_letter));
        if ((rc = play_room(&r, f, kind, err)) < 0)
            return rc;
        if (rc == 0)
            return sf_err_set(err, SF_ESTATE, "start script: the player died on floor %d", f);
    }
    r.stats.attempts = 1;
    finish(&r, SF_POOL_WEAK, 0, f, out, desc);
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * Text form
 * ---------------------------------------------------------------------- */

/* The engine relic whose counter bound a run relic's counter has: its
 * engine id when modelled, else the engine relic of the same name (the
 * prefix keeps the counters of Girya, Ancient Tea Set and the Bottled
 * relics whether or not their fight effect is modelled yet). */
static int run_relic_counter_engine(int item) {
    int engine = sf_run_relic_engine(item);
    return engine > 0 ? engine : sf_relic_lookup(run_relics[item].name);
}

/* The counter the spec gives engine relic `engine` (0 when it keeps none or
 * the spec does not hold it). */
static int relic_counter(const sf_fight_spec *spec, int engine) {
    for (int i = 0; i < spec->relics_n; i++)
        if (spec->relics[i] == engine)
            return spec->relic_counters[i];
    return 0;
}

int sf_start_format(const sf_fight_spec *spec, const sf_start_desc *desc, char *buf, size_t cap) {
    engine_text o = {buf, cap, 0, 0};
    if (cap > 0)
        buf[0] = '\0';
    for (int i = 0; i < spec->deck_n;) {
        int j = i;
        while (j < spec->deck_n && card_cmp(spec->deck[j], spec->deck[i]) == 0)
            j++;
        const char *name = sf_card_name(spec->deck[i].id);
        engine_text_put(&o, "%s%s", i ? "," : "", name ? name : "?");
        for (int u = 0; u < spec->deck[i].upgrades; u++)
            engine_text_put(&o, "+");
        if (j - i > 1)
            engine_text_put(&o, "*%d", j - i);
        i = j;
    }
    engine_text_put(&o, "|");
    int nr = desc ? desc->relics_n : spec->relics_n;
    for (int i = 0; i < nr; i++) {
        int item = desc ? desc->relics[i] : run_relic_of_engine(spec->relics[i]);
        const char *name = sf_run_relic_name(item);
        engine_text_put(&o, "%s%s", i ? "," : "", name ? name : "?");
        int engine = sf_run_relic_engine(item);
        int v = engine > 0 ? relic_counter(spec, engine)
                : desc && sf_relic_counter_max(run_relic_counter_engine(item))
                    ? desc->relic_counters[i]
                    : 0;
        if (v)
            engine_text_put(&o, ":%d", v);
    }
    engine_text_put(&o, "|");
    int last = -1;
    uint8_t slots[SF_MAX_POTION_SLOTS];
    for (int i = 0; i < SF_MAX_POTION_SLOTS; i++) {
        int item = 0;
        if (desc)
            item = desc->potions[i];
        else if (spec->potions[i])
            for (int k = 1; k < RUN_POTIONS && !item; k++)
                item = run_potions[k].engine == spec->potions[i] ? k : 0;
        slots[i] = (uint8_t)item;
        if (item)
            last = i;
    }
    for (int i = 0; i <= last; i++)
        engine_text_put(&o, "%s%s", i ? "," : "", slots[i] ? sf_run_potion_name(slots[i]) : "");
    engine_text_put(&o, "|floor %d|hp %d/%d|gold %d", spec->floor, spec->hp, spec->max_hp,
                    spec->gold);
    return engine_text_result(&o);
}

/* Copy the text of section [a, b) into out (trimmed of spaces). */
static int section(const char *a, const char *b, char *out, size_t cap) {
    while (a < b && *a == ' ')
        a++;
    while (b > a && b[-1] == ' ')
        b--;
    if ((size_t)(b - a) >= cap)
        return -1;
    memcpy(out, a, (size_t)(b - a));
    out[b - a] = '\0';
    return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return (int)(end - s);
}

int sf_start_parse(const char *text, sf_fight_spec *spec, sf_start_desc *desc, sf_err *err) {
    if (!text)
        return sf_err_set(err, SF_EINVAL, "start text: none given");
    const char *cut[8];
    int ns = 0;
    cut[ns++] = text;
    for (const char *p = text; *p; p++)
        if (*p == '|') {
            if (ns == 6)
                return sf_err_set(err, SF_EINVAL, "start text: more than 6 sections");
            cut[ns++] = p + 1;
        }
    if (ns < 4)
        return sf_err_set(
            err, SF_EINVAL,
            "start text: %d sections, want deck|relics|potions|floor F[|hp H/M][|gold "
            "G]",
            ns);
    const char *end_of[8];
    for (int i = 0; i < ns; i++)
        end_of[i] = i + 1 < ns ? cut[i + 1] - 1 : text + strlen(text);

    sf_fight_spec s = *spec;
    char buf[SF_START_TEXT_MAX];
    if (section(cut[0], end_of[0], buf, sizeof buf) < 0)
        return sf_err_set(err, SF_EINVAL, "start text: deck: too long");
    int rc = sf_deck_parse(buf, &s, err);
    if (rc < 0)
        return sf_err_prefix(err, "start text");

    /* relics */
    uint8_t items[SF_MAX_RELICS];
    int counters[SF_MAX_RELICS] = {0};
    int ni = 0;
    s.relics_n = 0;
    memset(s.relic_counters, 0, sizeof s.relic_counters);
    if (section(cut[1], end_of[1], buf, sizeof buf) < 0)
        return sf_err_set(err, SF_EINVAL, "start text: relics: too long");
    char *save = NULL;
    for (char *tok = buf[0] ? strtok_r(buf, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        char *colon = strchr(tok, ':');
        long counter = 0;
        if (colon) {
            *colon = '\0';
            if (parse_int(colon + 1, 0, 1000000, &counter) < 0)
                return sf_err_set(err, SF_EINVAL, "start text: relics: bad counter in '%s:%s'", tok,
                                  colon + 1);
        }
        int item = sf_run_relic_lookup(tok);
        if (item < 0)
            return sf_err_set(err, SF_EINVAL, "start text: relics: unknown relic '%s'", tok);
        if (ni == SF_MAX_RELICS)
            return sf_err_set(err, SF_EINVAL, "start text: relics: more than %d", SF_MAX_RELICS);
        counters[ni] = (int)counter;
        items[ni++] = (uint8_t)item;
        int engine = sf_run_relic_engine(item);
        int max = sf_relic_counter_max(run_relic_counter_engine(item));
        if (colon && !max)
            return sf_err_set(err, SF_EINVAL, "start text: relics: %s keeps no counter",
                              run_relics[item].name);
        if (counter >= max && max)
            return sf_err_set(err, SF_EINVAL, "start text: relics: %s counter %ld outside 0..%d",
                              run_relics[item].name, counter, max - 1);
        if (engine > 0) {
            s.relic_counters[s.relics_n] = (int)counter;
            s.relics[s.relics_n++] = (uint8_t)engine;
        }
    }

    /* potions, by slot; empty entries are empty slots; 5 slots with Potion
     * Belt among the relics */
    int nslots = SF_POTION_SLOTS;
    s.potion_slots = 0;
    for (int i = 0; i < ni; i++)
        if (run_relics[items[i]].fx == FX_POTION_BELT)
            nslots = s.potion_slots = SF_MAX_POTION_SLOTS;
    uint8_t slots[SF_MAX_POTION_SLOTS] = {0};
    memset(s.potions, 0, sizeof s.potions);
    if (section(cut[2], end_of[2], buf, sizeof buf) < 0)
        return sf_err_set(err, SF_EINVAL, "start text: potions: too long");
    if (buf[0]) {
        int slot = 0;
        for (char *p = buf;; slot++) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            if (slot >= nslots)
                return sf_err_set(err, SF_EINVAL, "start text: potions: more than %d slots%s",
                                  nslots, nslots < SF_MAX_POTION_SLOTS ? " (no Potion Belt)" : "");
            while (*p == ' ')
                p++;
            if (*p) {
                int item = sf_run_potion_lookup(p);
                if (item < 0)
                    return sf_err_set(err, SF_EINVAL, "start text: potions: unknown potion '%s'",
                                      p);
                slots[slot] = (uint8_t)item;
                s.potions[slot] = run_potions[item].engine;
            }
            if (!comma)
                break;
            p = comma + 1;
        }
    }

    /* floor, then the optional hp and gold */
    long v, w;
    if (section(cut[3], end_of[3], buf, sizeof buf) < 0 || strncmp(buf, "floor ", 6) != 0 ||
        (rc = parse_int(buf + 6, 0, 255, &v)) < 0 || buf[6 + rc])
        return sf_err_set(err, SF_EINVAL, "start text: want 'floor F' (0..255), got '%.40s'", buf);
    s.floor = (int)v;
    int seen_hp = 0, seen_gold = 0;
    for (int i = 4; i < ns; i++) {
        if (section(cut[i], end_of[i], buf, sizeof buf) < 0)
            return sf_err_set(err, SF_EINVAL, "start text: section %d: too long", i + 1);
        if (strncmp(buf, "hp ", 3) == 0 && !seen_hp) {
            int k = parse_int(buf + 3, 1, 999, &v);
            if (k < 0 || buf[3 + k] != '/' || (rc = parse_int(buf + 4 + k, 1, 999, &w)) < 0 ||
                buf[4 + k + rc] || v > w)
                return sf_err_set(err, SF_EINVAL,
                                  "start text: want 'hp H/M' with 1 <= H <= M <= 999, got '%.40s'",
                                  buf);
            s.hp = (int)v;
            s.max_hp = (int)w;
            seen_hp = 1;
        } else if (strncmp(buf, "gold ", 5) == 0 && !seen_gold) {
            if ((rc = parse_int(buf + 5, 0, 30000, &v)) < 0 || buf[5 + rc])
                return sf_err_set(err, SF_EINVAL,
                                  "start text: want 'gold G' (0..30000), got '%.40s'", buf);
            s.gold = (int)v;
            seen_gold = 1;
        } else {
            return sf_err_set(err, SF_EINVAL,
                              "start text: section %d: want 'hp H/M' or 'gold G' (once each), "
                              "got '%.40s'",
                              i + 1, buf);
        }
    }
    *spec = s;
    if (desc) {
        desc->relics_n = ni;
        memset(desc->relics, 0, sizeof desc->relics);
        memcpy(desc->relics, items, (size_t)ni);
        memset(desc->relic_counters, 0, sizeof desc->relic_counters);
        memcpy(desc->relic_counters, counters, sizeof counters[0] * (size_t)ni);
        memcpy(desc->potions, slots, sizeof desc->potions);
        desc->floor = s.floor;
    }
    return SF_OK;
}
