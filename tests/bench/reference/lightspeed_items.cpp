// lightspeed_items.cpp — bench-items' statistics from the reference engine,
// gamerpuppy/sts_lightspeed (C++17), for the same item names.
//
// Not built by meson: tests/bench/reference/run.sh compiles it against a
// lightspeed checkout given by path (its include/ and its src/ minus the
// save-file and console code) into a scratch directory. Nothing of
// lightspeed lives in this repository.
//
// What it plays, per item (as tests/bench/bench_items.c does in spirefleet):
// one Ironclad GameContext (ascension 0: the starter deck, Burning Blood,
// 80/80 HP, no potions) with the item added (a relic after Burning Blood,
// or a potion in slot 0), then N fights cycling the 20 Act-1 encounters in
// spirefleet's order. Per fight the run's random streams are re-seeded from
// the fight's seed, the room is set from the encounter's class (monster,
// elite, boss: Preserved Insect and Pantograph read it), a fresh
// BattleContext is initialised for the encounter and uniformly random legal
// actions are applied until the battle ends. Legal actions follow
// spirefleet's rule: one play per distinct card of the hand (same id,
// upgrades, costs and special data: identical cards collapse), a targeted
// card once per targetable monster, then one drink per distinct potion
// (targeted ones once per targetable monster; Fairy in a Bottle is never
// drunk), then end turn. On a choice screen one option is drawn uniformly:
// lightspeed's own option list (search::Action::enumerateCardSelectActions),
// or, for its multi-card screens (Elixir, Gambler's Brew, Gambling Chip), a
// uniformly random subset of the hand. spirefleet's turn cap is applied: a
// fight that would start turn 51, or whose turn reaches 250 actions, is a
// loss.
//
// HP left is read after lightspeed's end-of-battle relics (exitBattle into
// a copy of the GameContext: Burning Blood, Meat on the Bone).
//
// Output: one JSON line per item in bench-items' format (paired_* fields
// included, and "stuck": fights abandoned at a screen the driver cannot
// answer, counted as lost) with "engine":"lightspeed", plus {"...","implemented":false} for the
// items of spirefleet's pools that lightspeed does not implement in combat. Options: --fights N
// (default 2000), --seed S (default 1), --item NAME,
// --encounter NAME (spirefleet's encounter name: every fight against it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "combat/BattleContext.h"
#include "game/GameContext.h"
#include "sim/search/Action.h"

using namespace sts;

namespace {

enum class Kind { BASELINE, RELIC, POTION };

struct Item {
    const char *name; // spirefleet's name (sf_run_relic_name / sf_run_potion_name)
    Kind kind;
    RelicId relic;   // RelicId::INVALID: not implemented by the reference
    Potion potion;   // Potion::INVALID: not implemented by the reference
    const char *why; // why not, for the ones lightspeed lacks
};

constexpr RelicId NO_RELIC = RelicId::INVALID;

// Every combat relic of the Ironclad Act-1 pools (spirefleet's run table,
// "common/uncommon/rare: combat"), then every potion of the Ironclad list.
// Relics with no combat effect (Whetstone, Strawberry, ...) are left out.
const Item ITEMS[] = {
    {"baseline", Kind::BASELINE, NO_RELIC, Potion::INVALID, nullptr},
    // common
    {"Boot", Kind::RELIC, RelicId::THE_BOOT, Potion::INVALID, nullptr},
    {"Blood Vial", Kind::RELIC, RelicId::BLOOD_VIAL, Potion::INVALID, nullptr},
    {"Pen Nib", Kind::RELIC, RelicId::PEN_NIB, Potion::INVALID, nullptr},
    {"Akabeko", Kind::RELIC, RelicId::AKABEKO, Potion::INVALID, nullptr},
    {"Lantern", Kind::RELIC, RelicId::LANTERN, Potion::INVALID, nullptr},
    {"Bag of Preparation", Kind::RELIC, RelicId::BAG_OF_PREPARATION, Potion::INVALID, nullptr},
    {"Ancient Tea Set", Kind::RELIC, RelicId::ANCIENT_TEA_SET, Potion::INVALID, nullptr},
    {"Preserved Insect", Kind::RELIC, RelicId::PRESERVED_INSECT, Potion::INVALID, nullptr},
    {"Art of War", Kind::RELIC, RelicId::ART_OF_WAR, Potion::INVALID, nullptr},
    {"Vajra", Kind::RELIC, RelicId::VAJRA, Potion::INVALID, nullptr},
    {"Centennial Puzzle", Kind::RELIC, RelicId::CENTENNIAL_PUZZLE, Potion::INVALID, nullptr},
    {"Happy Flower", Kind::RELIC, RelicId::HAPPY_FLOWER, Potion::INVALID, nullptr},
    {"Oddly Smooth Stone", Kind::RELIC, RelicId::ODDLY_SMOOTH_STONE, Potion::INVALID, nullptr},
    {"Bronze Scales", Kind::RELIC, RelicId::BRONZE_SCALES, Potion::INVALID, nullptr},
    {"Nunchaku", Kind::RELIC, RelicId::NUNCHAKU, Potion::INVALID, nullptr},
    {"Orichalcum", Kind::RELIC, RelicId::ORICHALCUM, Potion::INVALID, nullptr},
    {"Anchor", Kind::RELIC, RelicId::ANCHOR, Potion::INVALID, nullptr},
    {"Bag of Marbles", Kind::RELIC, RelicId::BAG_OF_MARBLES, Potion::INVALID, nullptr},
    {"Red Skull", Kind::RELIC, RelicId::RED_SKULL, Potion::INVALID, nullptr},
    {"Toy Ornithopter", Kind::RELIC, NO_RELIC, Potion::INVALID,
     "no combat hook (the heal on drinking a potion is absent from src/combat)"},
    // uncommon
    {"Bottled Tornado", Kind::RELIC, RelicId::BOTTLED_TORNADO, Potion::INVALID, nullptr},
    {"Sundial", Kind::RELIC, RelicId::SUNDIAL, Potion::INVALID, nullptr},
    {"Kunai", Kind::RELIC, RelicId::KUNAI, Potion::INVALID, nullptr},
    {"Blue Candle", Kind::RELIC, RelicId::BLUE_CANDLE, Potion::INVALID, nullptr},
    {"Strike Dummy", Kind::RELIC, RelicId::STRIKE_DUMMY, Potion::INVALID, nullptr},
    {"Ink Bottle", Kind::RELIC, RelicId::INK_BOTTLE, Potion::INVALID, nullptr},
    {"Ornamental Fan", Kind::RELIC, RelicId::ORNAMENTAL_FAN, Potion::INVALID, nullptr},
    {"Bottled Lightning", Kind::RELIC, RelicId::BOTTLED_LIGHTNING, Potion::INVALID, nullptr},
    {"Gremlin Horn", Kind::RELIC, RelicId::GREMLIN_HORN, Potion::INVALID, nullptr},
    {"Horn Cleat", Kind::RELIC, RelicId::HORN_CLEAT, Potion::INVALID, nullptr},
    {"Letter Opener", Kind::RELIC, RelicId::LETTER_OPENER, Potion::INVALID, nullptr},
    {"Bottled Flame", Kind::RELIC, RelicId::BOTTLED_FLAME, Potion::INVALID, nullptr},
    {"Shuriken", Kind::RELIC, RelicId::SHURIKEN, Potion::INVALID, nullptr},
    {"Meat on the Bone", Kind::RELIC, RelicId::MEAT_ON_THE_BONE, Potion::INVALID, nullptr},
    {"Mummified Hand", Kind::RELIC, RelicId::MUMMIFIED_HAND, Potion::INVALID, nullptr},
    {"Pantograph", Kind::RELIC, RelicId::PANTOGRAPH, Potion::INVALID, nullptr},
    {"Mercury Hourglass", Kind::RELIC, RelicId::MERCURY_HOURGLASS, Potion::INVALID, nullptr},
    {"Self-Forming Clay", Kind::RELIC, RelicId::SELF_FORMING_CLAY, Potion::INVALID, nullptr},
    {"Paper Phrog", Kind::RELIC, RelicId::PAPER_PHROG, Potion::INVALID, nullptr},
    // rare
    {"Ginger", Kind::RELIC, RelicId::GINGER, Potion::INVALID, nullptr},
    {"Bird-Faced Urn", Kind::RELIC, RelicId::BIRD_FACED_URN, Potion::INVALID, nullptr},
    {"Unceasing Top", Kind::RELIC, RelicId::UNCEASING_TOP, Potion::INVALID, nullptr},
    {"Torii", Kind::RELIC, RelicId::TORII, Potion::INVALID, nullptr},
    {"Stone Calendar", Kind::RELIC, RelicId::STONE_CALENDAR, Potion::INVALID, nullptr},
    {"Thread and Needle", Kind::RELIC, RelicId::THREAD_AND_NEEDLE, Potion::INVALID, nullptr},
    {"Turnip", Kind::RELIC, RelicId::TURNIP, Potion::INVALID, nullptr},
    {"Ice Cream", Kind::RELIC, RelicId::ICE_CREAM, Potion::INVALID, nullptr},
    {"Calipers", Kind::RELIC, RelicId::CALIPERS, Potion::INVALID, nullptr},
    {"Lizard Tail", Kind::RELIC, RelicId::LIZARD_TAIL, Potion::INVALID, nullptr},
    {"Girya", Kind::RELIC, RelicId::GIRYA, Potion::INVALID, nullptr},
    {"Dead Branch", Kind::RELIC, RelicId::DEAD_BRANCH, Potion::INVALID, nullptr},
    {"Du-Vu Doll", Kind::RELIC, RelicId::DU_VU_DOLL, Potion::INVALID, nullptr},
    {"Pocketwatch", Kind::RELIC, RelicId::POCKETWATCH, Potion::INVALID, nullptr},
    {"Incense Burner", Kind::RELIC, RelicId::INCENSE_BURNER, Potion::INVALID, nullptr},
    {"Gambling Chip", Kind::RELIC, RelicId::GAMBLING_CHIP, Potion::INVALID, nullptr},
    {"Captain's Wheel", Kind::RELIC, RelicId::CAPTAINS_WHEEL, Potion::INVALID, nullptr},
    {"Fossilized Helix", Kind::RELIC, RelicId::FOSSILIZED_HELIX, Potion::INVALID, nullptr},
    {"Tungsten Rod", Kind::RELIC, RelicId::TUNGSTEN_ROD, Potion::INVALID, nullptr},
    {"Magic Flower", Kind::RELIC, RelicId::MAGIC_FLOWER, Potion::INVALID, nullptr},
    {"Charon's Ashes", Kind::RELIC, RelicId::CHARONS_ASHES, Potion::INVALID, nullptr},
    {"Champion Belt", Kind::RELIC, RelicId::CHAMPION_BELT, Potion::INVALID, nullptr},
    // shop, events and Neow (never in a start; engine relics of no run relic)
    {"Brimstone", Kind::RELIC, RelicId::BRIMSTONE, Potion::INVALID, nullptr},
    {"The Abacus", Kind::RELIC, RelicId::THE_ABACUS, Potion::INVALID, nullptr},
    {"Chemical X", Kind::RELIC, RelicId::CHEMICAL_X, Potion::INVALID, nullptr},
    {"Clockwork Souvenir", Kind::RELIC, RelicId::CLOCKWORK_SOUVENIR, Potion::INVALID, nullptr},
    {"Hand Drill", Kind::RELIC, RelicId::HAND_DRILL, Potion::INVALID, nullptr},
    {"Medical Kit", Kind::RELIC, RelicId::MEDICAL_KIT, Potion::INVALID, nullptr},
    {"Orange Pellets", Kind::RELIC, RelicId::ORANGE_PELLETS, Potion::INVALID, nullptr},
    {"Sling of Courage", Kind::RELIC, RelicId::SLING_OF_COURAGE, Potion::INVALID, nullptr},
    {"Strange Spoon", Kind::RELIC, RelicId::STRANGE_SPOON, Potion::INVALID, nullptr},
    {"Toolbox", Kind::RELIC, RelicId::TOOLBOX, Potion::INVALID, nullptr},
    {"Neow's Lament", Kind::RELIC, RelicId::NEOWS_LAMENT, Potion::INVALID, nullptr},
    {"Odd Mushroom", Kind::RELIC, RelicId::ODD_MUSHROOM, Potion::INVALID, nullptr},
    {"Gremlin Visage", Kind::RELIC, RelicId::GREMLIN_VISAGE, Potion::INVALID, nullptr},
    {"Warped Tongs", Kind::RELIC, RelicId::WARPED_TONGS, Potion::INVALID, nullptr},
    {"Frozen Eye", Kind::RELIC, NO_RELIC, Potion::INVALID,
     "no combat hook (it only shows the draw order, which a random player ignores)"},
    {"Face of Cleric", Kind::RELIC, NO_RELIC, Potion::INVALID,
     "its max HP on victory is in GameContext, not in the battle"},
    // potions, getPotions order
    {"Blood Potion", Kind::POTION, NO_RELIC, Potion::BLOOD_POTION, nullptr},
    {"Elixir", Kind::POTION, NO_RELIC, Potion::ELIXIR_POTION, nullptr},
    {"Heart of Iron", Kind::POTION, NO_RELIC, Potion::HEART_OF_IRON, nullptr},
    {"Block Potion", Kind::POTION, NO_RELIC, Potion::BLOCK_POTION, nullptr},
    {"Dexterity Potion", Kind::POTION, NO_RELIC, Potion::DEXTERITY_POTION, nullptr},
    {"Energy Potion", Kind::POTION, NO_RELIC, Potion::ENERGY_POTION, nullptr},
    {"Explosive Potion", Kind::POTION, NO_RELIC, Potion::EXPLOSIVE_POTION, nullptr},
    {"Fire Potion", Kind::POTION, NO_RELIC, Potion::FIRE_POTION, nullptr},
    {"Strength Potion", Kind::POTION, NO_RELIC, Potion::STRENGTH_POTION, nullptr},
    {"Swift Potion", Kind::POTION, NO_RELIC, Potion::SWIFT_POTION, nullptr},
    {"Weak Potion", Kind::POTION, NO_RELIC, Potion::WEAK_POTION, nullptr},
    {"Fear Potion", Kind::POTION, NO_RELIC, Potion::FEAR_POTION, nullptr},
    {"Attack Potion", Kind::POTION, NO_RELIC, Potion::ATTACK_POTION, nullptr},
    {"Skill Potion", Kind::POTION, NO_RELIC, Potion::SKILL_POTION, nullptr},
    {"Power Potion", Kind::POTION, NO_RELIC, Potion::POWER_POTION, nullptr},
    {"Colorless Potion", Kind::POTION, NO_RELIC, Potion::COLORLESS_POTION, nullptr},
    {"Flex Potion", Kind::POTION, NO_RELIC, Potion::FLEX_POTION, nullptr},
    {"Speed Potion", Kind::POTION, NO_RELIC, Potion::SPEED_POTION, nullptr},
    {"Blessing of the Forge", Kind::POTION, NO_RELIC, Potion::BLESSING_OF_THE_FORGE, nullptr},
    {"Regen Potion", Kind::POTION, NO_RELIC, Potion::REGEN_POTION, nullptr},
    {"Ancient Potion", Kind::POTION, NO_RELIC, Potion::ANCIENT_POTION, nullptr},
    {"Liquid Bronze", Kind::POTION, NO_RELIC, Potion::LIQUID_BRONZE, nullptr},
    {"Gambler's Brew", Kind::POTION, NO_RELIC, Potion::GAMBLERS_BREW, nullptr},
    {"Essence of Steel", Kind::POTION, NO_RELIC, Potion::ESSENCE_OF_STEEL, nullptr},
    {"Duplication Potion", Kind::POTION, NO_RELIC, Potion::DUPLICATION_POTION, nullptr},
    {"Distilled Chaos", Kind::POTION, NO_RELIC, Potion::DISTILLED_CHAOS, nullptr},
    {"Liquid Memories", Kind::POTION, NO_RELIC, Potion::LIQUID_MEMORIES, nullptr},
    {"Cultist Potion", Kind::POTION, NO_RELIC, Potion::CULTIST_POTION, nullptr},
    {"Fruit Juice", Kind::POTION, NO_RELIC, Potion::FRUIT_JUICE, nullptr},
    {"Snecko Oil", Kind::POTION, NO_RELIC, Potion::SNECKO_OIL, nullptr},
    {"Fairy in a Bottle", Kind::POTION, NO_RELIC, Potion::FAIRY_POTION, nullptr},
    {"Smoke Bomb", Kind::POTION, NO_RELIC, Potion::INVALID,
     "drinkPotion's SMOKE_BOMB case is a todo (drinking it does nothing)"},
    {"Entropic Brew", Kind::POTION, NO_RELIC, Potion::ENTROPIC_BREW, nullptr},
};

// spirefleet's encounter order (sf_encounter_name 0..19) and class.
struct Enc {
    const char *name;
    MonsterEncounter id;
    Room room;
};
const Enc ENCOUNTERS[20] = {
    {"Cultist", MonsterEncounter::CULTIST, Room::MONSTER},
    {"Jaw Worm", MonsterEncounter::JAW_WORM, Room::MONSTER},
    {"2 Louse", MonsterEncounter::TWO_LOUSE, Room::MONSTER},
    {"Small Slimes", MonsterEncounter::SMALL_SLIMES, Room::MONSTER},
    {"Gremlin Gang", MonsterEncounter::GREMLIN_GANG, Room::MONSTER},
    {"Lots of Slimes", MonsterEncounter::LOTS_OF_SLIMES, Room::MONSTER},
    {"Red Slaver", MonsterEncounter::RED_SLAVER, Room::MONSTER},
    {"Exordium Thugs", MonsterEncounter::EXORDIUM_THUGS, Room::MONSTER},
    {"Exordium Wildlife", MonsterEncounter::EXORDIUM_WILDLIFE, Room::MONSTER},
    {"Blue Slaver", MonsterEncounter::BLUE_SLAVER, Room::MONSTER},
    {"Looter", MonsterEncounter::LOOTER, Room::MONSTER},
    {"Large Slime", MonsterEncounter::LARGE_SLIME, Room::MONSTER},
    {"3 Louse", MonsterEncounter::THREE_LOUSE, Room::MONSTER},
    {"2 Fungi Beasts", MonsterEncounter::TWO_FUNGI_BEASTS, Room::MONSTER},
    {"Gremlin Nob", MonsterEncounter::GREMLIN_NOB, Room::ELITE},
    {"Lagavulin", MonsterEncounter::LAGAVULIN, Room::ELITE},
    {"3 Sentries", MonsterEncounter::THREE_SENTRIES, Room::ELITE},
    {"The Guardian", MonsterEncounter::THE_GUARDIAN, Room::BOSS},
    {"Hexaghost", MonsterEncounter::HEXAGHOST, Room::BOSS},
    {"Slime Boss", MonsterEncounter::SLIME_BOSS, Room::BOSS},
};

constexpr int MAX_TURNS = 50;         // SF_MAX_TURNS_DEFAULT
constexpr int MAX_TURN_ACTIONS = 250; // SF_MAX_TURN_ACTIONS

// SplitMix64 steps: fight seeds and the action stream (our own generator,
// so the draws do not depend on the standard library).
std::uint64_t mix64(std::uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

std::uint64_t derive(std::uint64_t base, std::uint64_t a, std::uint64_t b) {
    return mix64(mix64(mix64(base) ^ a) ^ (b * 0xD6E8FEB86659FD93ull));
}

struct ActionRng {
    std::uint64_t s;
    std::uint64_t next() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
    int below(int n) {
        return static_cast<int>(next() % static_cast<std::uint64_t>(n));
    }
};

struct Stats {
    long fights = 0, wins = 0, stuck = 0;
    double dec_sum = 0, dec_sq = 0, hp_sum = 0, hp_sq = 0, turn_sum = 0;
    // (item - baseline) in the fight of the same index: win, decisions, HP
    // at the end (0 when lost), as bench-items' paired_* fields.
    double pw_sum = 0, pw_sq = 0, pd_sum = 0, pd_sq = 0, ph_sum = 0, ph_sq = 0;
};

struct FightRec {
    int won, decisions, hp_end;
};

void add_pair(double &sum, double &sq, double d) {
    sum += d;
    sq += d * d;
}

bool same_card(const CardInstance &a, const CardInstance &b) {
    return a.id == b.id && a.getUpgradeCount() == b.getUpgradeCount() &&
           a.costForTurn == b.costForTurn && a.cost == b.cost &&
           a.freeToPlayOnce == b.freeToPlayOnce && a.specialData == b.specialData;
}

// The legal actions at a PLAYER_NORMAL decision, by spirefleet's rule.
void enumerate_normal(const BattleContext &bc, std::vector<search::Action> &out) {
    using search::Action;
    using search::ActionType;
    if (bc.isCardPlayAllowed()) {
        for (int h = 0; h < bc.cards.cardsInHand; ++h) {
            const auto &c = bc.cards.hand[h];
            bool dup = false;
            for (int j = 0; j < h && !dup; ++j)
                dup = same_card(bc.cards.hand[j], c);
            if (dup || !c.canUseOnAnyTarget(bc))
                continue;
            if (c.requiresTarget()) {
                for (int t = 0; t < bc.monsters.monsterCount; ++t)
                    if (bc.monsters.arr[t].isTargetable() && c.canUse(bc, t, false))
                        out.emplace_back(ActionType::CARD, h, t);
            } else {
                out.emplace_back(ActionType::CARD, h);
            }
        }
    }
    for (int p = 0; p < bc.potionCapacity; ++p) {
        const Potion pot = bc.potions[p];
        if (pot == Potion::EMPTY_POTION_SLOT || pot == Potion::INVALID ||
            pot == Potion::FAIRY_POTION)
            continue;
        bool dup = false;
        for (int j = 0; j < p && !dup; ++j)
            dup = bc.potions[j] == pot;
        if (dup)
            continue;
        if (potionRequiresTarget(pot)) {
            for (int t = 0; t < bc.monsters.monsterCount; ++t)
                if (bc.monsters.arr[t].isTargetable())
                    out.emplace_back(ActionType::POTION, p, t);
        } else {
            out.emplace_back(ActionType::POTION, p);
        }
    }
    out.emplace_back(ActionType::END_TURN);
}

// One option of an open choice screen, uniformly; false when it has none.
bool choose(const BattleContext &bc, ActionRng &rng, search::Action &a) {
    const auto task = bc.cardSelectInfo.cardSelectTask;
    if (task == CardSelectTask::EXHAUST_MANY || task == CardSelectTask::GAMBLE) {
        // Any subset of the hand (up to pickCount cards): each card in or
        // out with probability 1/2 is uniform over the subsets when the
        // limit does not bind, which it does not at 10 for Elixir.
        const int n = bc.cards.cardsInHand;
        int limit = task == CardSelectTask::EXHAUST_MANY ? bc.cardSelectInfo.pickCount : 10;
        std::uint32_t mask = 0;
        do {
            mask = n > 0 ? static_cast<std::uint32_t>(rng.next() & ((1u << n) - 1)) : 0;
        } while (__builtin_popcount(mask) > limit);
        a = search::Action(search::ActionType::MULTI_CARD_SELECT, static_cast<int>(mask));
        return true;
    }
    const auto opts = search::Action::enumerateCardSelectActions(bc);
    if (opts.empty())
        return false;
    a = opts[rng.below(static_cast<int>(opts.size()))];
    return true;
}

// A GameContext holding the item, as a fresh pick-up (spirefleet's counter 0).
GameContext make_context(const Item &it, std::uint64_t seed) {
    GameContext gc(CharacterClass::IRONCLAD, seed, 0);
    if (it.kind == Kind::RELIC) {
        int data = 0;
        if (it.relic == RelicId::LIZARD_TAIL)
            data = 1; // unused (0 means spent)
        if (it.relic == RelicId::NEOWS_LAMENT)
            data = 3; // fresh: 3 fights with 1-HP enemies ahead (obtainRelic)
        gc.relics.add({it.relic, data});
        // spirefleet's bench bottles Bash and the first Defend; no Power to
        // bottle for Bottled Tornado.
        const CardId want = it.relic == RelicId::BOTTLED_FLAME       ? CardId::BASH
                            : it.relic == RelicId::BOTTLED_LIGHTNING ? CardId::DEFEND_RED
                                                                     : CardId::INVALID;
        if (want != CardId::INVALID) {
            for (int i = 0; i < gc.deck.size(); ++i) {
                if (gc.deck.cards[i].getId() == want) {
                    gc.deck.bottleCard(i, gc.deck.cards[i].getType());
                    break;
                }
            }
        }
    } else if (it.kind == Kind::POTION) {
        gc.potions[0] = it.potion;
        gc.potionCount = 1;
    }
    return gc;
}

// With `record` the fights are the baseline's and are written there;
// otherwise they are paired with `paired` (the baseline's).
void run_item(const Item &it, std::uint64_t seed, int fights, int encounter, Stats &st,
              FightRec *record, const FightRec *paired) {
    GameContext gc = make_context(it, seed);
    std::vector<search::Action> acts;
    acts.reserve(96);
    for (int f = 0; f < fights; ++f) {
        const Enc &enc = ENCOUNTERS[encounter >= 0 ? encounter : f % 20];
        const std::uint64_t fseed = derive(seed, static_cast<std::uint64_t>(f), 0);
        ActionRng rng{derive(seed, static_cast<std::uint64_t>(f), 1) | 1};
        gc.seed = fseed;
        gc.miscRng = Random(fseed);
        gc.potionRng = Random(fseed);
        gc.curRoom = enc.room;
        gc.info.encounter = enc.id;

        // Value-initialised, and the player's class set by hand:
        // BattleContext::init never sets player.cc, which picks the pools of
        // Attack / Skill / Power Potion, Entropic Brew and the other random
        // cards and potions; left as stack garbage it can name another
        // class or none (Entropic Brew then loops for ever in
        // returnRandomPotionOfRarity).
        BattleContext bc{};
        bc.player.cc = gc.cc;
        bc.init(gc, enc.id);
        long decisions = 0;
        int turn_actions = 0, last_turn = bc.turn;
        bool capped = false, stuck = false;
        while (bc.outcome == Outcome::UNDECIDED) {
            if (bc.turn != last_turn) {
                last_turn = bc.turn;
                turn_actions = 0;
            }
            if (bc.turn >= MAX_TURNS || turn_actions >= MAX_TURN_ACTIONS) {
                capped = true;
                break;
            }
            search::Action a;
            if (bc.inputState == InputState::CARD_SELECT) {
                if (!choose(bc, rng, a)) {
                    stuck = true;
                    break;
                }
            } else if (bc.inputState == InputState::PLAYER_NORMAL) {
                acts.clear();
                enumerate_normal(bc, acts);
                a = acts[rng.below(static_cast<int>(acts.size()))];
            } else {
                stuck = true;
                break;
            }
            a.execute(bc);
            ++decisions;
            ++turn_actions;
        }
        const bool won = !capped && !stuck && bc.outcome == Outcome::PLAYER_VICTORY;
        ++st.fights;
        st.stuck += stuck;
        st.dec_sum += static_cast<double>(decisions);
        st.dec_sq += static_cast<double>(decisions) * static_cast<double>(decisions);
        st.turn_sum += capped ? MAX_TURNS : std::min(bc.turn + 1, MAX_TURNS);
        int hp_end = 0;
        if (won) {
            GameContext after = gc;
            after.regainControlAction = [](GameContext &) {}; // no room to return to
            bc.exitBattle(after);
            hp_end = after.curHp;
            ++st.wins;
            st.hp_sum += hp_end;
            st.hp_sq += static_cast<double>(hp_end) * hp_end;
        }
        const FightRec me{won ? 1 : 0, static_cast<int>(decisions), hp_end};
        if (record)
            record[f] = me;
        const FightRec &b = record ? me : paired[f];
        add_pair(st.pw_sum, st.pw_sq, me.won - b.won);
        add_pair(st.pd_sum, st.pd_sq, me.decisions - b.decisions);
        add_pair(st.ph_sum, st.ph_sq, me.hp_end - b.hp_end);
    }
}

double sd_of(double sum, double sq, long n) {
    if (n < 2)
        return 0.0;
    const double var = (sq - sum * sum / static_cast<double>(n)) / static_cast<double>(n - 1);
    return var > 0.0 ? std::sqrt(var) : 0.0;
}

const char *kind_name(Kind k) {
    return k == Kind::RELIC ? "relic" : k == Kind::POTION ? "potion" : "baseline";
}

void print_line(const Item &it, const Stats &st) {
    const long n = st.fights, w = st.wins;
    std::printf("{\"bench\":\"items\",\"engine\":\"lightspeed\",\"item\":\"%s\",\"kind\":\"%s\","
                "\"fights\":%ld,\"wins\":%ld,\"decisions_mean\":%.4f,\"decisions_sd\":%.4f,"
                "\"hp_left_mean_won\":%.4f,\"hp_left_sd_won\":%.4f,\"turns_mean\":%.4f,"
                "\"paired_win\":[%.5f,%.5f],\"paired_decisions\":[%.4f,%.4f],"
                "\"paired_hp_end\":[%.4f,%.4f],\"stuck\":%ld}\n",
                it.name, kind_name(it.kind), n, w, n ? st.dec_sum / n : 0.0,
                sd_of(st.dec_sum, st.dec_sq, n), w ? st.hp_sum / w : 0.0,
                sd_of(st.hp_sum, st.hp_sq, w), n ? st.turn_sum / n : 0.0, n ? st.pw_sum / n : 0.0,
                sd_of(st.pw_sum, st.pw_sq, n), n ? st.pd_sum / n : 0.0,
                sd_of(st.pd_sum, st.pd_sq, n), n ? st.ph_sum / n : 0.0,
                sd_of(st.ph_sum, st.ph_sq, n), st.stuck);
    std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
    int fights = 2000;
    std::uint64_t seed = 1;
    const char *only = nullptr;
    int encounter = -1; // -1: cycle the 20 encounters
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--fights") && i + 1 < argc) {
            fights = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--seed") && i + 1 < argc) {
            seed = std::strtoull(argv[++i], nullptr, 10);
        } else if (!std::strcmp(argv[i], "--item") && i + 1 < argc) {
            only = argv[++i];
        } else if (!std::strcmp(argv[i], "--encounter") && i + 1 < argc) {
            ++i;
            for (int e = 0; e < 20; ++e)
                if (!std::strcmp(argv[i], ENCOUNTERS[e].name))
                    encounter = e;
            if (encounter < 0) {
                std::fprintf(stderr, "lightspeed-items: no encounter named %s\n", argv[i]);
                return 2;
            }
        } else {
            std::fprintf(stderr, "usage: lightspeed-items [--fights N] [--seed S] [--item NAME] "
                                 "[--encounter NAME]\n");
            return 2;
        }
    }
    if (fights < 1) {
        std::fprintf(stderr, "lightspeed-items: --fights wants a positive count\n");
        return 2;
    }
    bool found = false;
    std::vector<FightRec> base(static_cast<std::size_t>(fights));
    for (const Item &it : ITEMS) {
        if (only && it.kind != Kind::BASELINE && std::strcmp(only, it.name))
            continue;
        found = found || it.kind != Kind::BASELINE || (only && !std::strcmp(only, "baseline"));
        const bool implemented =
            it.kind == Kind::BASELINE ||
            (it.kind == Kind::RELIC ? it.relic != NO_RELIC : it.potion != Potion::INVALID);
        if (!implemented) {
            std::printf("{\"bench\":\"items\",\"engine\":\"lightspeed\",\"item\":\"%s\","
                        "\"kind\":\"%s\",\"implemented\":false,\"why\":\"%s\"}\n",
                        it.name, kind_name(it.kind), it.why);
            continue;
        }
        Stats st;
        run_item(it, seed, fights, encounter, st, it.kind == Kind::BASELINE ? base.data() : nullptr,
                 base.data());
        print_line(it, st);
    }
    if (only && !found) {
        std::fprintf(stderr, "lightspeed-items: no item named %s\n", only);
        return 2;
    }
    return 0;
}
