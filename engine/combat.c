/*
 * combat.c — the rules every card, monster, relic and potion shares: damage
 * and block formulas, powers with the justApplied rule, piles, drawing and
 * shuffling (true and belief mode), exhaust triggers, choice screens, and
 * monster bookkeeping (death, splits, compaction).
 *
 * Sources: game-rules §1 (damage/block formulas, debuff durations,
 * shuffling and drawing) and §2 (order of events). The game resolves effects
 * through an action queue; we run them directly in the order that queue
 * produces, and defer the few effects the queue puts behind a card's own
 * actions (Curl Up's block, Sharp Hide's damage) until the card resolves.
 */
#include <math.h>

#include "engine/internal.h"

sf_rng *combat_rng(sf_combat *c, int stream) {
    c->streams_used |= 1u << stream;
    return &c->rng[stream];
}

/* ------------------------------------------------------------------------
 * Damage and block formulas (game-rules §1). All float, floored once.
 * ---------------------------------------------------------------------- */

int combat_card_damage(const sf_combat *c, const sf_card *card, int base, int m) {
    float d = (float)base;
    /* relics' atDamageModify: Strike Dummy, +3 for a STRIKE-tagged card */
    if (card && (sf_cards[card->id].flags & CD_STRIKE) && combat_has_relic(c, RELIC_STRIKE_DUMMY))
        d += 3.0f;
    int str = c->pw[PW_STR];
    if (card && card->id == CARD_HEAVY_BLADE)
        str *= CARD_NUM(card, mag); /* Strength counts x3 (x5) */
    d += (float)str;
    if (card && sf_cards[card->id].type == CT_ATTACK)
        d += (float)c->pw[PW_VIGOR];
    if (c->pw[PW_PEN_NIB] > 0 && card && sf_cards[card->id].type == CT_ATTACK)
        d *= 2.0f;
    if (c->pw[PW_WEAK] > 0)
        d *= 0.75f;
    if (m >= 0 && c->mon[m].pw[PW_VULN] > 0) /* Paper Phrog: 1.75 on monsters */
        d *= combat_has_relic(c, RELIC_PAPER_PHROG) ? 1.75f : 1.5f;
    int out = (int)floorf(d);
    return out < 0 ? 0 : out;
}

int combat_card_block(const sf_combat *c, int base) {
    if (c->pw[PW_NO_BLOCK] > 0)
        return 0; /* NoBlockPower.modifyBlockLast (Panic Button) */
    float b = (float)(base + c->pw[PW_DEX]);
    if (b < 0.0f)
        b = 0.0f;
    if (c->pw[PW_FRAIL] > 0)
        b *= 0.75f;
    int out = (int)floorf(b);
    return out < 0 ? 0 : out;
}

int combat_monster_damage(const sf_combat *c, int m, int base) {
    const sf_monster *mo = &c->mon[m];
    float d = (float)(base + mo->pw[PW_STR]);
    if (mo->pw[PW_WEAK] > 0)
        d *= 0.75f;
    if (c->pw[PW_VULN] > 0) /* Odd Mushroom: 1.25 on the player */
        d *= combat_has_relic(c, RELIC_ODD_MUSHROOM) ? 1.25f : 1.5f;
    int out = (int)floorf(d);
    if (out < 0)
        out = 0;
    if (c->pw[PW_INTANGIBLE] > 0 && out > 1)
        out = 1;
    return out;
}

/* ------------------------------------------------------------------------
 * Monsters: liveness, death, damage
 * ---------------------------------------------------------------------- */

int combat_alive(const sf_combat *c, int m) {
    return m >= 0 && m < c->n_mon && c->mon[m].id != MON_NONE &&
           !(c->mon[m].flags & (MF_DEAD | MF_ESCAPED));
}

int combat_alive_count(const sf_combat *c) {
    int n = 0;
    for (int m = 0; m < c->n_mon; m++)
        n += combat_alive(c, m);
    return n;
}

/* MonsterGroup.getRandomMonster(null, true, cardRandomRng): a uniform pick
 * among living monsters, one random(size-1) call. */
int combat_random_monster(sf_combat *c) {
    int alive[SF_MAX_MONSTERS], n = 0;
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            alive[n++] = m;
    if (n == 0)
        return -1;
    return alive[sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), n - 1)];
}

/* AbstractRoom.endBattle: the fight is won (or escaped), whatever was
 * queued is dropped, relics' onVictory run. */
static void end_battle(sf_combat *c) {
    c->flags |= FL_WON;
    c->phase = PH_OVER;
    c->pending.active = 0;
    memset(c->defer, 0, sizeof c->defer);
    c->defer_n = 0;
    relics_on_victory(c);
}

void combat_check_end(sf_combat *c) {
    if (c->phase == PH_OVER)
        return;
    if (c->hp <= 0) {
        c->flags |= FL_LOST;
        c->phase = PH_OVER;
        memset(c->defer, 0, sizeof c->defer);
        c->defer_n = 0;
        return;
    }
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            return;
    /* Every monster dead or escaped: victory (endBattle). "Every monster
     * escaped" (no gold reward) needs no monster to have died, including
     * ones already dropped from the list. */
    int escaped_all = !(c->flags & FL_MONSTER_DIED);
    for (int m = 0; m < c->n_mon; m++)
        if (!(c->mon[m].flags & MF_ESCAPED))
            escaped_all = 0;
    if (escaped_all && c->n_mon > 0)
        c->flags |= FL_ESCAPED_ALL;
    end_battle(c);
}

void combat_player_escape(sf_combat *c) {
    if (c->phase == PH_OVER)
        return;
    c->escaped = 1;
    end_battle(c);
}

static void monster_die(sf_combat *c, int m) {
    sf_monster *mo = &c->mon[m];
    mo->hp = 0;
    mo->flags |= MF_DEAD;
    mo->block = 0;
    c->flags |= FL_MONSTER_DIED;
    monster_on_death(c, m);
    relics_on_monster_death(c);
}

/* Monster takes `dmg` of `type` from the player's side. Returns HP lost. */
static int monster_take_damage(sf_combat *c, int m, int dmg, int type) {
    sf_monster *mo = &c->mon[m];
    /* A 0-damage hit still runs the game's damage() hooks, but none of them
     * acts on 0 (Curl Up, Angry, splits and wake-ups all need HP loss). */
    if (!combat_alive(c, m) || dmg <= 0)
        return 0;
    int amount = dmg;
    if (type != DT_HP_LOSS && mo->block > 0) {
        int absorbed = amount < mo->block ? amount : mo->block;
        mo->block = (int16_t)(mo->block - absorbed);
        amount -= absorbed;
        if (mo->block == 0) /* decrementBlock's brokeBlock(): the relics' onBlockBroken */
            relics_on_block_broken(c, m);
    }
    /* The player's relics' onAttackToChangeDamage on its NORMAL damage: Boot
     * raises an unblocked 1..4 to 5. */
    if (type == DT_NORMAL && amount > 0 && amount < 5 && combat_has_relic(c, RELIC_BOOT))
        amount = 5;
    /* onAttacked powers see the post-block amount. Curl Up triggers once
     * (CurlUpPower.triggered, ai[1] for lice) on a non-lethal NORMAL hit; its
     * block and its removal are queued behind the card. */
    if (type == DT_NORMAL && amount > 0 && mo->pw[PW_CURL_UP] > 0 && !mo->ai[1] &&
        amount < mo->hp) {
        mo->ai[1] = 1;
        combat_defer(c, DQ_CURL_UP, m);
    }
    if (type == DT_NORMAL && amount > 0 && mo->pw[PW_ANGRY] > 0)
        mo->pw[PW_STR] = (int16_t)(mo->pw[PW_STR] + mo->pw[PW_ANGRY]);
    int lost = amount < mo->hp ? amount : mo->hp;
    mo->hp = (int16_t)(mo->hp - amount);
    if (mo->hp < 0)
        mo->hp = 0;
    c->damage_dealt += (uint32_t)lost;
    if (lost > 0)
        monster_on_hp_loss(c, m, lost, type);
    if (mo->hp <= 0)
        monster_die(c, m);
    return lost;
}

int combat_player_hits(sf_combat *c, int m, int dmg) {
    return monster_take_damage(c, m, dmg, DT_NORMAL);
}

void combat_thorns_all(sf_combat *c, int dmg) {
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            combat_thorns_to_monster(c, m, dmg);
}

int combat_thorns_to_monster(sf_combat *c, int m, int dmg) {
    return monster_take_damage(c, m, dmg, DT_THORNS);
}

/* Insert a monster at list position `at` (split children), shifting later
 * ones right. Returns its index or -1 when the list is full. */
int combat_spawn_monster(sf_combat *c, int at, int id, int hp) {
    if (c->n_mon >= SF_MAX_MONSTERS)
        return -1;
    for (int i = c->n_mon; i > at; i--)
        c->mon[i] = c->mon[i - 1];
    c->n_mon++;
    memset(&c->mon[at], 0, sizeof c->mon[at]);
    monster_init(c, at, id, hp);
    c->mon[at].flags |= MF_NO_ACT;
    monster_roll_move(c, at);
    return at;
}

/* ------------------------------------------------------------------------
 * The player: damage, HP, block, powers
 * ---------------------------------------------------------------------- */

static void player_lost_hp(sf_combat *c, int lost, int self_source) {
    c->hp_losses = (uint8_t)(c->hp_losses < 255 ? c->hp_losses + 1 : 255);
    /* Blood for Blood: -1 cost per HP-loss event (AbstractPlayer
     * .updateCardsOnDamage), for copies in hand, discard and draw pile only:
     * not the exhaust pile, not a card being played. */
    sf_card *piles[3] = {c->hand, c->draw, c->discard};
    int counts[3] = {c->hand_n, c->draw_n, c->discard_n};
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < counts[p]; i++)
            if (piles[p][i].id == CARD_BLOOD_FOR_BLOOD && piles[p][i].cost > 0)
                piles[p][i].cost--;
    if (self_source && c->pw[PW_RUPTURE] > 0)
        c->pw[PW_STR] = (int16_t)(c->pw[PW_STR] + c->pw[PW_RUPTURE]);
    (void)lost;
    relics_was_hp_lost(c);
    relics_on_hp_change(c);
}

int combat_damage_player(sf_combat *c, int dmg, int type, int attacker) {
    if (c->phase == PH_OVER || dmg < 0)
        return 0;
    int amount = dmg;
    if (c->pw[PW_INTANGIBLE] > 0 && amount > 1)
        amount = 1;
    if (type != DT_HP_LOSS) {
        int absorbed = amount < c->block ? amount : c->block;
        c->block = (int16_t)(c->block - absorbed);
        amount -= absorbed;
    }
    /* onAttackedToChangeDamage: Buffer takes whatever got past block, of
     * any type, one stack per hit that had some. Fossilized Helix is the
     * only source of Buffer here: its counter holds the stacks. */
    int buffer = combat_relic_slot(c, RELIC_FOSSILIZED_HELIX);
    if (buffer >= 0 && c->relic_counter[buffer] > 0) {
        if (amount > 0)
            c->relic_counter[buffer]--;
        amount = 0;
    }
    /* onAttacked, a monster's NORMAL hit: the powers (Thorns and Flame
     * Barrier answer every hit), then the relics (Torii: 2..5 becomes 1). */
    if (attacker >= 0 && type == DT_NORMAL) {
        if (c->pw[PW_THORNS] > 0)
            combat_thorns_to_monster(c, attacker, c->pw[PW_THORNS]);
        if (c->pw[PW_FLAME_BARRIER] > 0)
            combat_thorns_to_monster(c, attacker, c->pw[PW_FLAME_BARRIER]);
        if (amount > 1 && amount <= 5 && combat_has_relic(c, RELIC_TORII))
            amount = 1;
    }
    /* onLoseHpLast: Tungsten Rod, 1 less of any damage. */
    if (amount > 0 && combat_has_relic(c, RELIC_TUNGSTEN_ROD))
        amount--;
    if (amount <= 0)
        return 0;
    /* wasHPLost: Plated Armor loses a stack to a monster's NORMAL hit. */
    if (attacker >= 0 && type == DT_NORMAL && c->pw[PW_PLATED] > 0)
        c->pw[PW_PLATED]--;
    int lost = amount < c->hp ? amount : c->hp;
    c->hp = (int16_t)(c->hp - amount);
    player_lost_hp(c, lost, attacker < 0);
    if (c->hp <= 0) {
        c->hp = 0;
        /* Fairy in a Bottle: heal to 30% of max HP (at least 1) instead of dying. */
        for (int s = 0; s < c->potion_slots; s++) {
            if (c->potions[s] == POTION_FAIRY) {
                c->potions[s] = POTION_NONE;
                c->potions_used++;
                /* FairyPotion.use: player.heal(), so Magic Flower scales it */
                int heal = (int)((float)c->max_hp * 0.3f);
                heal = relics_heal_amount(c, heal < 1 ? 1 : heal);
                c->hp = (int16_t)(heal > c->max_hp ? c->max_hp : heal);
                relics_on_hp_change(c);
                return lost;
            }
        }
        if (relics_on_death(c))
            return lost;
        combat_check_end(c);
    }
    return lost;
}

void combat_lose_hp(sf_combat *c, int amount) {
    combat_damage_player(c, amount, DT_HP_LOSS, -1);
}

void combat_heal(sf_combat *c, int amount) {
    if (amount <= 0 || c->hp <= 0)
        return;
    amount = relics_heal_amount(c, amount);
    int hp = c->hp + amount;
    c->hp = (int16_t)(hp > c->max_hp ? c->max_hp : hp);
    relics_on_hp_change(c);
}

void combat_gain_block(sf_combat *c, int amount) {
    if (amount <= 0)
        return;
    int b = c->block + amount;
    c->block = (int16_t)(b > 999 ? 999 : b);
    /* Juggernaut (onGainedBlock): a DamageRandomEnemyAction queued at the
     * bottom; the target is picked (cardRandomRng) when it runs. */
    if (c->pw[PW_JUGGERNAUT] > 0)
        combat_defer(c, DQ_JUGGERNAUT, c->pw[PW_JUGGERNAUT]);
}

/* The game's PowerType.DEBUFF: what Artifact blocks (ApplyPowerAction). */
int combat_is_debuff(int pw, int amount) {
    switch (pw) {
    case PW_WEAK:
    case PW_VULN:
    case PW_FRAIL:
    case PW_ENTANGLED:
    case PW_NO_DRAW:
    case PW_LOSE_STR:
    case PW_LOSE_DEX:
    case PW_NO_BLOCK:
    case PW_SHACKLED: return 1;
    case PW_STR:
    case PW_DEX: return amount < 0;
    default: return 0;
    }
}

static int16_t clamp16(int v) {
    return (int16_t)(v > 999 ? 999 : v < -999 ? -999 : v);
}

/* ApplyPowerAction on the player. Artifact eats any DEBUFF-type power,
 * whoever applies it: Berserk's Vulnerable, Flex's and Speed Potion's
 * end-of-turn loss, Battle Trance's No Draw, a negative Limit Break. */
void combat_power_player(sf_combat *c, int pw, int amount, int from_monster) {
    if (pw == PW_NO_DRAW && c->pw[PW_NO_DRAW] > 0)
        return; /* No Draw never stacks */
    /* Ginger and Turnip stop Weak and Frail before Artifact would */
    if ((pw == PW_WEAK && combat_has_relic(c, RELIC_GINGER)) ||
        (pw == PW_FRAIL && combat_has_relic(c, RELIC_TURNIP)))
        return;
    if (combat_is_debuff(pw, amount) && c->pw[PW_ARTIFACT] > 0) {
        c->pw[PW_ARTIFACT]--;
        return;
    }
    int fresh = c->pw[pw] == 0;
    c->pw[pw] = clamp16(c->pw[pw] + amount);
    if (fresh && from_monster) {
        if (pw == PW_WEAK)
            c->just |= JA_WEAK;
        else if (pw == PW_FRAIL)
            c->just |= JA_FRAIL;
        else if (pw == PW_VULN && (c->flags & FL_TURN_ENDED))
            c->just |= JA_VULN;
    }
}

void combat_power_monster(sf_combat *c, int m, int pw, int amount) {
    sf_monster *mo = &c->mon[m];
    if (!combat_alive(c, m) || pw >= PW_MON_N)
        return;
    /* Champion Belt: the player's Vulnerable on a monster without Artifact
     * brings 1 Weak (Vulnerable on a monster only ever comes from the player). */
    int belt = pw == PW_VULN && amount > 0 && mo->pw[PW_ARTIFACT] == 0 &&
               combat_has_relic(c, RELIC_CHAMPION_BELT);
    /* SadisticPower.onApplyPower, before Artifact is looked at: a debuff
     * other than Shackled on a monster without Artifact queues its THORNS
     * damage (a debuff on a monster only ever comes from the player). */
    if (c->pw[PW_SADISTIC] > 0 && combat_is_debuff(pw, amount) && pw != PW_SHACKLED &&
        mo->pw[PW_ARTIFACT] == 0)
        combat_defer(c, DQ_SADISTIC, m);
    if (combat_is_debuff(pw, amount) && mo->pw[PW_ARTIFACT] > 0) {
        mo->pw[PW_ARTIFACT]--;
        return;
    }
    mo->pw[pw] = clamp16(mo->pw[pw] + amount);
    if (belt)
        combat_power_monster(c, m, PW_WEAK, 1);
}

/* ------------------------------------------------------------------------
 * Cards and piles
 * ---------------------------------------------------------------------- */

sf_card combat_make_card(const sf_combat *c, int id, int upg) {
    const card_def *d = &sf_cards[id];
    sf_card k = {(uint8_t)id, (uint8_t)upg, (int8_t)(upg ? d->cost_up : d->cost), 0, 0};
    /* Blood for Blood made mid-combat starts reduced by the HP-loss count. */
    if (id == CARD_BLOOD_FOR_BLOOD) {
        int cost = k.cost - c->hp_losses;
        k.cost = (int8_t)(cost < 0 ? 0 : cost);
    }
    return k;
}

int combat_card_cost(const sf_combat *c, const sf_card *card) {
    if (card->cost == COST_UNPLAYABLE) /* Medical Kit: a status costs nothing */
        return relics_status_playable(c, card) ? 0 : COST_UNPLAYABLE;
    if (card->cost == COST_X)
        return card->cost;
    if (card->flags & (CF_FREE_TURN | CF_FREE_ONCE))
        return 0;
    if (c->pw[PW_CORRUPTION] > 0 && sf_cards[card->id].type == CT_SKILL)
        return 0;
    if ((card->flags & CF_ONE_TURN) && card->cost > 1)
        return 1;
    return card->cost;
}

/* A pile is full only in fights far longer than real play (dozens of turns
 * of Dazed from three Sentries). The game has no such cap, so losing the
 * card would make a fight that is not the game: the card is counted, never
 * written out of bounds, and the fight ends at once as an engine-limit loss
 * that labels carry (docs/engine.md "Capacities"). */
static int dropped(sf_combat *c) {
    if (c->cards_dropped < 0xFFFF)
        c->cards_dropped++;
    if (c->phase != PH_OVER) {
        c->engine_limit = 1;
        combat_stop(c);
    }
    return 0;
}

void combat_stop(sf_combat *c) {
    if (c->phase == PH_OVER)
        return;
    c->flags |= FL_LOST;
    c->phase = PH_OVER;
    c->pending.active = 0;
    memset(c->defer, 0, sizeof c->defer);
    c->defer_n = 0;
}

int combat_add_to_discard(sf_combat *c, const sf_card *card) {
    if (c->discard_n >= SF_MAX_PILE)
        return dropped(c);
    c->discard[c->discard_n++] = *card;
    return 1;
}

int combat_add_to_hand(sf_combat *c, const sf_card *card) {
    if (c->hand_n < SF_MAX_HAND) {
        c->hand[c->hand_n++] = *card;
        return 1;
    }
    return combat_add_to_discard(c, card);
}

/* Keep the unknown region of a belief-mode draw pile sorted (canonical). */
static int card_cmp(const sf_card *a, const sf_card *b) {
    return memcmp(a, b, sizeof *a);
}

void combat_sort_cards(sf_card *cards, int n) {
    for (int i = 1; i < n; i++) {
        sf_card k = cards[i];
        int j = i - 1;
        while (j >= 0 && card_cmp(&cards[j], &k) > 0) {
            cards[j + 1] = cards[j];
            j--;
        }
        cards[j + 1] = k;
    }
}

int combat_add_to_draw_top(sf_combat *c, const sf_card *card) {
    if (c->draw_n >= SF_MAX_PILE)
        return dropped(c);
    c->draw[c->draw_n++] = *card;
    if (c->draw_known < c->draw_n)
        c->draw_known++;
    return 1;
}

/* CardGroup.addToRandomSpot: index random(size-1) of the pre-insert list, so
 * never the very top. The player cannot see where it went: only the top card
 * stays known. In belief mode the card joins the unknown multiset instead
 * (no randomness is needed to represent that). */
int combat_add_to_draw_random(sf_combat *c, sf_card card) {
    if (c->draw_n >= SF_MAX_PILE)
        return dropped(c);
    /* Frozen Eye with the whole pile seen: the player sees where it goes,
     * a chance event in belief mode too */
    int seen = combat_has_relic(c, RELIC_FROZEN_EYE) && c->draw_known == c->draw_n;
    if (c->draw_known > 1 && !seen)
        c->draw_known = 1;
    if ((c->flags & FL_BELIEF) && !seen) {
        int unknown = c->draw_n - c->draw_known;
        /* shift the known top up by one and insert into the unknown region */
        for (int i = c->draw_n; i > unknown; i--)
            c->draw[i] = c->draw[i - 1];
        c->draw[unknown] = card;
        c->draw_n++;
        combat_sort_cards(c->draw, unknown + 1);
        return 1;
    }
    int at =
        c->draw_n == 0 ? 0 : sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), c->draw_n - 1);
    for (int i = c->draw_n; i > at; i--)
        c->draw[i] = c->draw[i - 1];
    c->draw[at] = card;
    c->draw_n++;
    if (seen)
        c->draw_known = c->draw_n;
    return 1;
}

void combat_add_new(sf_combat *c, int zone, sf_card card) {
    /* a made card that finds no room counts as made and dropped */
    if (c->cards_created < 0xFFFF)
        c->cards_created++;
    if (zone == ZONE_HAND)
        combat_add_to_hand(c, &card);
    else if (zone == ZONE_DRAW)
        combat_add_to_draw_random(c, card);
    else
        combat_add_to_discard(c, &card);
}

/* Take pile[i] out into *out (not in the pile), closing the gap. Cards go
 * through pointers, not by value: a 5-byte struct in a register is
 * assembled and split byte-wise, which stalled on store forwarding in the
 * hot paths (docs/benchmarks.md, "Release build"). */
static void remove_at(sf_card *pile, uint8_t *n, int i, sf_card *out) {
    *out = pile[i];
    memmove(&pile[i], &pile[i + 1], sizeof(sf_card) * (size_t)(*n - 1 - i));
    (*n)--;
    memset(&pile[*n], 0, sizeof(sf_card));
}

void combat_remove_hand(sf_combat *c, int i, sf_card *out) {
    remove_at(c->hand, &c->hand_n, i, out);
}

/* CardGroup.moveToExhaustPile: powers' onExhaust (Feel No Pain's block and
 * Dark Embrace's draw are queued at the bottom: they run after the current
 * card; Dark Embrace queues nothing once every monster is dead), then the
 * card's own triggerOnExhaust (Sentinel's energy, added to the top: at once). */
void combat_exhaust_card(sf_combat *c, sf_card card) {
    card.flags &= (uint8_t)~CF_TURN_FLAGS;
    if (c->exhaust_n < SF_MAX_PILE)
        c->exhaust[c->exhaust_n++] = card;
    else
        dropped(c);
    relics_on_exhaust(c);
    if (c->pw[PW_FNP] > 0)
        combat_defer(c, DQ_BLOCK, c->pw[PW_FNP]);
    if (c->pw[PW_DARK_EMBRACE] > 0 && combat_alive_count(c) > 0)
        combat_defer(c, DQ_DRAW, c->pw[PW_DARK_EMBRACE]);
    if (card.id == CARD_SENTINEL) {
        int e = c->energy + (card.upg ? 3 : 2);
        c->energy = (uint8_t)(e > 255 ? 255 : e);
    }
}

void combat_exhaust_from_hand(sf_combat *c, int i) {
    sf_card k;
    combat_remove_hand(c, i, &k);
    combat_exhaust_card(c, k);
}

void combat_remove_draw(sf_combat *c, int i, sf_card *out) {
    if (i >= c->draw_n - c->draw_known)
        c->draw_known--; /* a known card: the others keep their known places */
    remove_at(c->draw, &c->draw_n, i, out);
}

int combat_add_to_draw_bottom(sf_combat *c, const sf_card *card) {
    if (c->draw_n >= SF_MAX_PILE)
        return dropped(c);
    int unknown = c->draw_n - c->draw_known;
    memmove(&c->draw[1], &c->draw[0], sizeof(sf_card) * (size_t)c->draw_n);
    c->draw[0] = *card;
    c->draw_n++;
    if (unknown == 0)
        c->draw_known++; /* the whole pile was known: it still is */
    else if (c->flags & FL_BELIEF)
        combat_sort_cards(c->draw, unknown + 1);
    return 1;
}

/* Move the discard pile into the draw pile, which is empty: both callers
 * (combat_draw, combat_pop_draw) reshuffle only when nothing is left to
 * draw, so no card on it is known either (draw_known <= draw_n). True mode:
 * Collections.shuffle with java.util.Random(shuffleRng.randomLong()),
 * shuffled list's last element on top. Belief mode: the cards become the
 * unknown multiset (sorted); randomness is spent when they are drawn. */
static void reshuffle(sf_combat *c) {
    relics_on_shuffle(c);
    int n = c->discard_n;
    if (!(c->flags & FL_BELIEF)) {
        combat_java_shuffle(c, c->discard, n, sizeof(sf_card));
    }
    memcpy(c->draw, c->discard, sizeof(sf_card) * (size_t)n);
    c->draw_n = (uint8_t)n;
    c->draw_known = (uint8_t)(relics_draw_order_seen(c) ? n : 0);
    if (c->flags & FL_BELIEF)
        combat_sort_cards(c->draw, n);
    memset(c->discard, 0, sizeof(sf_card) * (size_t)n);
    c->discard_n = 0;
}

/* Deep Breath (see internal.h): the discard pile, shuffled, goes on top
 * of the draw pile (its last card on top), then the whole draw pile is
 * shuffled; nothing on it stays known. Belief mode: one unknown multiset. */
void combat_shuffle_discard_into_draw(sf_combat *c) {
    relics_on_shuffle(c); /* EmptyDeckShuffleAction's constructor */
    int n = c->discard_n, base = c->draw_n;
    if (base + n > SF_MAX_PILE) {
        dropped(c);
        return;
    }
    if (!(c->flags & FL_BELIEF)) {
        combat_java_shuffle(c, c->discard, n, sizeof(sf_card));
    }
    memcpy(&c->draw[base], c->discard, sizeof(sf_card) * (size_t)n);
    c->draw_n = (uint8_t)(base + n);
    memset(c->discard, 0, sizeof(sf_card) * (size_t)n);
    c->discard_n = 0;
    c->draw_known = (uint8_t)(relics_draw_order_seen(c) ? c->draw_n : 0);
    if (c->flags & FL_BELIEF) {
        combat_sort_cards(c->draw, c->draw_n);
        return;
    }
    combat_java_shuffle(c, c->draw, c->draw_n, sizeof(sf_card));
}

/* Take the next card off the draw pile (top, or a chance pick in belief
 * mode when the top is unknown). Caller checks draw_n > 0. */
static void take_top(sf_combat *c, sf_card *out) {
    if (c->draw_known > 0 || !(c->flags & FL_BELIEF)) {
        if (c->draw_known > 0)
            c->draw_known--;
        remove_at(c->draw, &c->draw_n, c->draw_n - 1, out);
        return;
    }
    int unknown = c->draw_n - c->draw_known;
    int i = unknown == 1 ? 0 : sf_rng_random(combat_rng(c, SF_STREAM_SHUFFLE), unknown - 1);
    remove_at(c->draw, &c->draw_n, i, out);
}

/* The next card Havoc would play; removes it from the draw pile. Returns 0
 * when both draw and discard are empty. */
int combat_pop_draw(sf_combat *c, sf_card *out) {
    if (c->draw_n == 0) {
        if (c->discard_n == 0)
            return 0;
        reshuffle(c);
    }
    take_top(c, out);
    return 1;
}

void combat_draw(sf_combat *c, int n) {
    if (c->pw[PW_NO_DRAW] > 0)
        return;
    for (int k = 0; k < n; k++) {
        if (c->hand_n >= SF_MAX_HAND)
            return;
        if (c->draw_n == 0) {
            if (c->discard_n == 0)
                return;
            reshuffle(c);
        }
        take_top(c, &c->hand[c->hand_n]);
        int type = sf_cards[c->hand[c->hand_n++].id].type;
        /* onCardDraw: Fire Breathing and Evolve queue their actions at the
         * bottom, behind the rest of this draw. */
        if ((type == CT_STATUS || type == CT_CURSE) && c->pw[PW_FIRE_BREATHING] > 0)
            combat_defer(c, DQ_FIRE_BREATHING, c->pw[PW_FIRE_BREATHING]);
        if (type == CT_STATUS && c->pw[PW_EVOLVE] > 0 && c->pw[PW_NO_DRAW] == 0)
            combat_defer(c, DQ_DRAW, c->pw[PW_EVOLVE]);
    }
}

/* ------------------------------------------------------------------------
 * Deferred effects (the bottom of the game's action queue)
 * ---------------------------------------------------------------------- */

static void run_deferred(sf_combat *c, sf_deferred d);

void combat_defer(sf_combat *c, int kind, int arg) {
    sf_deferred d = {(uint8_t)kind, (uint8_t)(arg < 0 ? 0 : arg > 255 ? 255 : arg)};
    if (c->defer_n >= SF_DEFER_CAP) {
        run_deferred(c, d); /* cannot happen in Act 1; never drop an effect */
        return;
    }
    c->defer[c->defer_n++] = d;
}

static void run_deferred(sf_combat *c, sf_deferred d) {
    switch (d.kind) {
    case DQ_BLOCK: combat_gain_block(c, d.arg); break;
    case DQ_DRAW: combat_draw(c, d.arg); break;
    case DQ_JUGGERNAUT: {
        int m = combat_random_monster(c);
        if (m >= 0)
            combat_thorns_to_monster(c, m, d.arg);
        break;
    }
    case DQ_FIRE_BREATHING: combat_thorns_all(c, d.arg); break;
    case DQ_CURL_UP: {
        sf_monster *mo = &c->mon[d.arg];
        if (combat_alive(c, d.arg)) {
            int b = mo->block + mo->pw[PW_CURL_UP];
            mo->block = (int16_t)(b > 999 ? 999 : b);
        }
        mo->pw[PW_CURL_UP] = 0;
        break;
    }
    case DQ_GUARDIAN:
        if (combat_alive(c, d.arg))
            monster_guardian_defensive(c, d.arg);
        break;
    case DQ_ENERGY: c->energy = (uint8_t)(c->energy + d.arg > 255 ? 255 : c->energy + d.arg); break;
    case DQ_ADD_CARD: combat_add_new(c, ZONE_HAND, combat_make_card(c, d.arg, 0)); break;
    case DQ_SADISTIC:
        /* the amount is Sadistic Nature's when the damage runs: nothing
         * between the queueing and the drain can change it */
        if (combat_alive(c, d.arg))
            combat_thorns_to_monster(c, d.arg, c->pw[PW_SADISTIC]);
        break;
    case DQ_HAND_DRILL:
        if (combat_alive(c, d.arg))
            combat_power_monster(c, d.arg, PW_VULN, 2);
        break;
    default: break;
    }
}

/* Run queued effects in order until none is left or the fight has ended
 * (the game then drops the rest with clearPostCombatActions). */
void combat_drain(sf_combat *c) {
    while (c->defer_n > 0) {
        combat_check_end(c);
        if (c->phase == PH_OVER) {
            memset(c->defer, 0, sizeof c->defer);
            c->defer_n = 0;
            return;
        }
        sf_deferred d = c->defer[0];
        memmove(&c->defer[0], &c->defer[1], sizeof(sf_deferred) * (size_t)(c->defer_n - 1));
        c->defer_n--;
        memset(&c->defer[c->defer_n], 0, sizeof(sf_deferred));
        run_deferred(c, d);
    }
}

/* ------------------------------------------------------------------------
 * Choice screens
 * ---------------------------------------------------------------------- */

int combat_choice_zone(int kind) {
    switch (kind) {
    case CH_HEADBUTT:
    case CH_LIQUID_MEMORIES: return ZONE_DISCARD;
    case CH_EXHUME: return ZONE_EXHAUST;
    case CH_DISCOVERY:
    case CH_DISCOVERY_CARD:
    case CH_TOOLBOX: return ZONE_OFFER;
    case CH_SECRET_SKILL:
    case CH_SECRET_ATTACK: return ZONE_DRAW;
    default: return ZONE_HAND;
    }
}

int combat_choice_cardless(int kind) {
    return kind == CH_DISCOVERY || kind == CH_LIQUID_MEMORIES || kind == CH_ELIXIR ||
           kind == CH_GAMBLE || kind == CH_TOOLBOX;
}

/* A multi-select screen (the game's handCardSelectScreen with anyNumber):
 * the player picks cards one at a time, then "done". To give every subset
 * exactly one order, a pick is offered only at or after the position after
 * the last pick, and only the first of identical cards there. */
static int multi_select(int kind) {
    return kind == CH_ELIXIR || kind == CH_GAMBLE || kind == CH_PURITY ||
           kind == CH_FORETHOUGHT_ANY;
}

/* 1 while a multi-select may take another card: Purity's screen takes at
 * most `amount`. */
static int multi_room(const sf_combat *c, int kind) {
    if (kind != CH_PURITY)
        return 1;
    int n = 0;
    for (unsigned b = c->pending.picked; b; b &= b - 1)
        n++;
    return n < c->pending.amount;
}

/* The first hand position a multi-select may still pick. */
static int multi_cursor(const sf_combat *c) {
    int cur = 0;
    for (int i = 0; i < SF_MAX_HAND; i++)
        if (c->pending.picked & (1u << i))
            cur = i + 1;
    return cur;
}

int combat_can_upgrade(const sf_card *k) {
    const card_def *d = &sf_cards[k->id];
    if (d->type == CT_STATUS || d->type == CT_CURSE)
        return 0;
    return k->upg == 0 || (d->flags & CD_MULTI_UPGRADE);
}

static int choice_accepts(int kind, const sf_card *k) {
    const card_def *d = &sf_cards[k->id];
    switch (kind) {
    case CH_ARMAMENTS: return combat_can_upgrade(k);
    case CH_DUAL_WIELD: return d->type == CT_ATTACK || d->type == CT_POWER;
    case CH_EXHUME: return k->id != CARD_EXHUME;
    case CH_SECRET_SKILL: return d->type == CT_SKILL;
    case CH_SECRET_ATTACK: return d->type == CT_ATTACK;
    default: return 1;
    }
}

/* Options of the open choice: for the hand, hand positions of the first
 * instance of each distinct eligible card (hand order); for discard and
 * exhaust, the k-th distinct card in sorted order, so that transposed states
 * (whose piles are equal as multisets) share option numbering. Writes option
 * ids (hand position, or sorted rank) and returns the count. */
int combat_choice_options(const sf_combat *c, int kind, uint8_t *opts, sf_card *cards) {
    int zone = combat_choice_zone(kind), n = 0;
    if (zone == ZONE_OFFER) {
        for (int i = 0; i < SF_OFFER_N; i++) {
            if (c->pending.offer[i].id == CARD_NONE)
                continue;
            if (cards)
                cards[n] = c->pending.offer[i];
            opts[n++] = (uint8_t)i;
        }
        return n;
    }
    if (multi_select(kind)) {
        for (int i = multi_cursor(c); i < c->hand_n && multi_room(c, kind); i++) {
            int dup = 0;
            for (int j = multi_cursor(c); j < i && !dup; j++)
                dup = !card_cmp(&c->hand[j], &c->hand[i]);
            if (!dup) {
                if (cards)
                    cards[n] = c->hand[i];
                opts[n++] = (uint8_t)i;
            }
        }
        if (cards)
            memset(&cards[n], 0, sizeof cards[n]);
        opts[n++] = CHOICE_DONE;
        return n;
    }
    if (zone == ZONE_HAND) {
        for (int i = 0; i < c->hand_n; i++) {
            if (!choice_accepts(kind, &c->hand[i]))
                continue;
            int dup = 0;
            for (int j = 0; j < i && !dup; j++)
                dup = choice_accepts(kind, &c->hand[j]) && !card_cmp(&c->hand[j], &c->hand[i]);
            if (!dup) {
                if (cards)
                    cards[n] = c->hand[i];
                opts[n++] = (uint8_t)i;
            }
        }
        return n;
    }
    const sf_card *pile = zone == ZONE_DISCARD ? c->discard
                          : zone == ZONE_DRAW  ? c->draw
                                               : c->exhaust;
    int pn = zone == ZONE_DISCARD ? c->discard_n : zone == ZONE_DRAW ? c->draw_n : c->exhaust_n;
    sf_card sorted[SF_MAX_PILE];
    int m = 0;
    for (int i = 0; i < pn; i++)
        if (choice_accepts(kind, &pile[i]))
            sorted[m++] = pile[i];
    combat_sort_cards(sorted, m);
    for (int i = 0; i < m; i++) {
        if (i > 0 && !card_cmp(&sorted[i - 1], &sorted[i]))
            continue;
        if (cards)
            cards[n] = sorted[i];
        opts[n] = (uint8_t)n;
        n++;
    }
    return n;
}

/* Find the pile position holding `card` (first instance). */
static int find_card(const sf_card *pile, int n, const sf_card *card) {
    for (int i = 0; i < n; i++)
        if (!card_cmp(&pile[i], card))
            return i;
    return -1;
}

/* AbstractCard.upgrade() with its cost rules: a card whose upgrade lowers its
 * cost takes the upgraded cost (upgradeBaseCost); a Blood for Blood already
 * reduced by HP losses drops one more (BloodForBlood.upgrade). */
void combat_upgrade_card(sf_card *k) {
    const card_def *d = &sf_cards[k->id];
    if (k->upg > 0 && !(d->flags & CD_MULTI_UPGRADE))
        return;
    if (k->upg == 0 && k->id == CARD_BLOOD_FOR_BLOOD) {
        if (k->cost >= d->cost)
            k->cost = d->cost_up;
        else if (k->cost > 0)
            k->cost--;
    } else if (k->upg == 0 && d->cost_up != d->cost && k->cost == d->cost) {
        k->cost = d->cost_up;
    }
    if (k->upg < 255)
        k->upg++;
}

/* A hand-selection screen (ArmamentsAction, DualWieldAction) first takes the
 * ineligible cards out of the hand and puts them back on top afterwards, so
 * the hand ends as: eligible cards not chosen (in order), then what the
 * action puts back. Rebuild the hand that way around hand position `chosen`:
 * `mid` (the upgraded card, or nothing) goes between the eligible and the
 * ineligible cards. Returns the new hand size. */
static int regroup_hand(sf_combat *c, int kind, int chosen, const sf_card *mid) {
    sf_card keep[SF_MAX_HAND], rest[SF_MAX_HAND];
    int nk = 0, nr = 0;
    for (int i = 0; i < c->hand_n; i++) {
        if (i == chosen)
            continue;
        if (choice_accepts(kind, &c->hand[i]))
            keep[nk++] = c->hand[i];
        else
            rest[nr++] = c->hand[i];
    }
    int n = 0;
    for (int i = 0; i < nk; i++)
        c->hand[n++] = keep[i];
    if (mid)
        c->hand[n++] = *mid;
    for (int i = 0; i < nr; i++)
        c->hand[n++] = rest[i];
    for (int i = n; i < SF_MAX_HAND; i++)
        memset(&c->hand[i], 0, sizeof(sf_card));
    c->hand_n = (uint8_t)n;
    return n;
}

static int count_eligible(const sf_combat *c, int kind) {
    int zone = combat_choice_zone(kind), n = 0;
    if (zone == ZONE_OFFER)
        return SF_OFFER_N;
    const sf_card *pile = zone == ZONE_HAND      ? c->hand
                          : zone == ZONE_DISCARD ? c->discard
                          : zone == ZONE_DRAW    ? c->draw
                                                 : c->exhaust;
    int pn = zone == ZONE_HAND      ? c->hand_n
             : zone == ZONE_DISCARD ? c->discard_n
             : zone == ZONE_DRAW    ? c->draw_n
                                    : c->exhaust_n;
    for (int i = 0; i < pn; i++)
        n += choice_accepts(kind, &pile[i]);
    return n;
}

/* Take the first copy of `chosen` out of the pile of `zone` (ZONE_HAND,
 * ZONE_DRAW: the other known top cards stay known, ZONE_DISCARD or
 * ZONE_EXHAUST) into *out; 0 when it is not there. */
static int take_chosen(sf_combat *c, int zone, const sf_card *chosen, sf_card *out) {
    int i;
    switch (zone) {
    case ZONE_HAND:
        if ((i = find_card(c->hand, c->hand_n, chosen)) >= 0)
            combat_remove_hand(c, i, out);
        break;
    case ZONE_DRAW:
        if ((i = find_card(c->draw, c->draw_n, chosen)) >= 0)
            combat_remove_draw(c, i, out);
        break;
    case ZONE_DISCARD:
        if ((i = find_card(c->discard, c->discard_n, chosen)) >= 0)
            remove_at(c->discard, &c->discard_n, i, out);
        break;
    default:
        if ((i = find_card(c->exhaust, c->exhaust_n, chosen)) >= 0)
            remove_at(c->exhaust, &c->exhaust_n, i, out);
        break;
    }
    return i >= 0;
}

/* ForethoughtAction: a card whose cost is above 0 becomes free to play
 * once; CardGroup.moveToBottomOfDeck. */
static void to_bottom_free_once(sf_combat *c, sf_card *k) {
    if (k->cost > 0)
        k->flags |= CF_FREE_ONCE;
    combat_add_to_draw_bottom(c, k);
}

/* Resolve the choice of `chosen` (the chosen card's value). `screen` is 1
 * when the game would have shown a selection screen (two or more eligible
 * cards) and 0 for its single-card shortcut; the two differ in hand order. */
static void resolve_choice(sf_combat *c, int kind, sf_card chosen, int screen) {
    int amount = c->pending.amount;
    switch (kind) {
    case CH_ARMAMENTS: {
        int i = find_card(c->hand, c->hand_n, &chosen);
        if (i < 0)
            break;
        if (screen) {
            sf_card up = c->hand[i];
            combat_upgrade_card(&up);
            regroup_hand(c, kind, i, &up);
        } else {
            combat_upgrade_card(&c->hand[i]);
        }
        break;
    }
    case CH_HEADBUTT:
    case CH_WARCRY:
    case CH_EXHUME:
    case CH_SECRET_SKILL:
    case CH_SECRET_ATTACK: {
        /* the chosen card moves: Headbutt's (discard pile) and Warcry's
         * (hand) on top of the draw pile; Exhume's (exhaust pile) and
         * Secret Technique's or Weapon's (draw pile, the first instance
         * from the bottom: in belief mode one of the unknown cards before a
         * known top card) to the hand (a full hand: the discard pile) */
        sf_card k;
        if (!take_chosen(c, combat_choice_zone(kind), &chosen, &k))
            break;
        if (kind == CH_HEADBUTT || kind == CH_WARCRY)
            combat_add_to_draw_top(c, &k);
        else
            combat_add_to_hand(c, &k);
        break;
    }
    case CH_TRUE_GRIT:
    case CH_BURNING_PACT: {
        int i = find_card(c->hand, c->hand_n, &chosen);
        if (i >= 0)
            combat_exhaust_from_hand(c, i);
        if (kind == CH_BURNING_PACT)
            combat_draw(c, amount);
        break;
    }
    case CH_DUAL_WIELD: {
        /* MakeTempCardInHandAction(makeStatEquivalentCopy()): copies keep
         * cost and "free this turn"; a full hand sends them to discard. On
         * the selection screen the chosen card itself goes back as one more
         * copy, behind the cards that were set aside. */
        int i = find_card(c->hand, c->hand_n, &chosen);
        if (i < 0)
            break;
        if (screen) {
            regroup_hand(c, kind, i, NULL);
            combat_add_to_hand(c, &chosen);
        }
        for (int k = 0; k < amount; k++)
            combat_add_new(c, ZONE_HAND, chosen);
        break;
    }
    case CH_DISCOVERY:
    case CH_DISCOVERY_CARD: {
        /* DiscoveryAction: a copy of the pick costs 0 this turn
         * (setCostForTurn: not for X-cost cards); a full hand sends it to
         * the discard pile. */
        memset(c->pending.offer, 0, sizeof c->pending.offer);
        sf_card k = chosen;
        if (k.cost >= 0)
            k.flags |= CF_FREE_TURN;
        combat_add_new(c, ZONE_HAND, k);
        break;
    }
    case CH_TOOLBOX:
        /* ChooseOneColorless: a copy of the pick, its cost kept; a full
         * hand sends it to the discard pile */
        memset(c->pending.offer, 0, sizeof c->pending.offer);
        combat_add_new(c, ZONE_HAND, chosen);
        break;
    case CH_FORETHOUGHT: {
        sf_card k;
        if (take_chosen(c, ZONE_HAND, &chosen, &k))
            to_bottom_free_once(c, &k);
        break;
    }
    case CH_LIQUID_MEMORIES: {
        /* BetterDiscardPileToHandAction(1, 0): with a full hand the card
         * stays in the discard pile. */
        sf_card k;
        if (c->hand_n < SF_MAX_HAND && take_chosen(c, ZONE_DISCARD, &chosen, &k)) {
            if (k.cost >= 0)
                k.flags |= CF_FREE_TURN;
            combat_add_to_hand(c, &k);
        }
        break;
    }
    default: break;
    }
}

/* A multi-select screen's "done" (CHOICE_DONE): the picked cards leave the
 * hand in hand order (the order they were picked), then the screen's effect:
 * Elixir exhausts them (ExhaustAction), Gambler's Brew discards them and
 * draws as many (GamblingChipAction: the draw goes on top of the queue). */
static void finish_multi(sf_combat *c, int kind) {
    sf_card out[SF_MAX_HAND];
    int n = 0;
    for (int i = c->hand_n - 1; i >= 0; i--)
        if (c->pending.picked & (1u << i))
            combat_remove_hand(c, i, &out[n++]);
    c->pending.picked = 0;
    for (int j = n - 1; j >= 0; j--) {
        if (kind == CH_ELIXIR || kind == CH_PURITY)
            combat_exhaust_card(c, out[j]);
        else if (kind == CH_FORETHOUGHT_ANY)
            to_bottom_free_once(c, &out[j]);
        else
            combat_add_to_discard(c, &out[j]);
    }
    if (kind == CH_GAMBLE && n > 0)
        combat_draw(c, n);
}

int combat_open_choice(sf_combat *c, int kind, int amount) {
    uint8_t opts[SF_MAX_PILE];
    sf_card cards[SF_MAX_PILE];
    c->pending.amount = (uint8_t)amount;
    if (combat_alive_count(c) == 0)
        return 0; /* the battle is ending (Headbutt killed the last one) */
    if (kind == CH_EXHUME && c->hand_n >= SF_MAX_HAND)
        return 0; /* ExhumeAction: a full hand ends it at once */
    if (kind == CH_LIQUID_MEMORIES && c->hand_n >= SF_MAX_HAND)
        return 0; /* nothing can move to a full hand, whatever is picked */
    if (kind == CH_WARCRY && c->hand_n == 1) {
        /* PutOnDeckAction with no more cards than it needs moves them with
         * hand.getRandomCard(cardRandomRng): one call even for one card. */
        (void)sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), 0);
        sf_card k;
        combat_remove_hand(c, 0, &k);
        combat_add_to_draw_top(c, &k);
        return 0;
    }
    if (multi_select(kind)) {
        /* ExhaustAction / GamblingChipAction / ForethoughtAction with an
         * empty hand do nothing; otherwise the screen opens even for one
         * card (zero may be picked). */
        c->pending.picked = 0;
        if (c->hand_n == 0 || !multi_room(c, kind))
            return 0;
        c->pending.kind = (uint8_t)kind;
        c->phase = PH_CHOICE;
        return 1;
    }
    int eligible = count_eligible(c, kind);
    int n = combat_choice_options(c, kind, opts, cards);
    if (n == 0) {
        if (kind == CH_BURNING_PACT)
            combat_draw(c, amount);
        return 0;
    }
    if (n == 1) {
        /* one distinct option: the game either resolves it itself (one
         * eligible card) or shows a screen whose every pick is the same */
        resolve_choice(c, kind, cards[0], eligible >= 2);
        return 0;
    }
    c->pending.kind = (uint8_t)kind;
    c->phase = PH_CHOICE;
    return 1;
}

/* Apply the player's choice. `option` is an option id from
 * combat_choice_options(). Returns SF_OK or SF_EINVAL. */
int combat_choose(sf_combat *c, int option) {
    uint8_t opts[SF_MAX_PILE];
    sf_card cards[SF_MAX_PILE];
    int kind = c->pending.kind;
    int n = combat_choice_options(c, kind, opts, cards);
    for (int i = 0; i < n; i++) {
        if (opts[i] != option)
            continue;
        if (multi_select(kind)) {
            if (option != CHOICE_DONE) {
                c->pending.picked |= (uint16_t)(1u << option);
                /* nothing left to pick: the screen is done */
                if (combat_choice_options(c, kind, opts, NULL) > 1)
                    return SF_OK;
            }
            c->phase = PH_PLAYER;
            c->pending.kind = CH_NONE;
            finish_multi(c, kind);
            return SF_OK;
        }
        c->phase = PH_PLAYER;
        c->pending.kind = CH_NONE;
        resolve_choice(c, kind, cards[i], 1);
        return SF_OK;
    }
    return SF_EINVAL;
}

/* ------------------------------------------------------------------------
 * Monster list upkeep
 * ---------------------------------------------------------------------- */

/* Drop dead and escaped monsters from the list, keeping order. Only called
 * between top-level steps, so indices are stable while a card resolves. */
void combat_compact(sf_combat *c) {
    int w = 0;
    for (int m = 0; m < c->n_mon; m++) {
        if (c->mon[m].flags & (MF_DEAD | MF_ESCAPED))
            continue;
        if (w != m)
            c->mon[w] = c->mon[m];
        w++;
    }
    for (int m = w; m < c->n_mon; m++)
        memset(&c->mon[m], 0, sizeof c->mon[m]);
    c->n_mon = (uint8_t)w;
}

/* ------------------------------------------------------------------------
 * Random cards in combat
 * ---------------------------------------------------------------------- */

/* returnTrulyRandomCardInCombat(type) walks srcCommonCardPool, then
 * srcUncommonCardPool, then srcRareCardPool. The src pools are built
 * (initializeCardPools) from CardLibrary's HashMap<String, AbstractCard> in
 * iteration order with addToBottom, which reverses it: each is the reverse
 * of the reward pool's index order (run_card_pool, §11), which was
 * reproduced with java.util.HashMap (docs/engine.md). For Attacks this gives
 * Infernal Blade's 28-card list: Sword Boomerang ... Anger, Uppercut ...
 * Reckless Charge, Bludgeon, Fiend Fire, Immolate. */
/* The colorless pool in the game's index order (AbstractDungeon.
 * colorlessCardPool: CardLibrary's HashMap iteration, colorless cards of
 * rarity other than BASIC and SPECIAL, statuses left out, each added with
 * addToTop). srcColorlessCardPool is built from it with addToBottom, so
 * returnTrulyRandomColorlessCardInCombat walks it backwards: Madness,
 * Thinking Ahead, Mind Blast, ..., Sadistic Nature, Dark Shackles (Bandage
 * Up, HEALING, left out: 34 cards). The order was reproduced as the Ironclad
 * pools' was (docs/engine.md). */
static const uint8_t colorless_pool[] = {CARD_DARK_SHACKLES,
                                         CARD_SADISTIC_NATURE,
                                         CARD_PANIC_BUTTON,
                                         CARD_TRIP,
                                         CARD_DRAMATIC_ENTRANCE,
                                         CARD_IMPATIENCE,
                                         CARD_THE_BOMB,
                                         CARD_BLIND,
                                         CARD_BANDAGE_UP,
                                         CARD_SECRET_TECHNIQUE,
                                         CARD_DEEP_BREATH,
                                         CARD_VIOLENCE,
                                         CARD_PANACHE,
                                         CARD_SECRET_WEAPON,
                                         CARD_APOTHEOSIS,
                                         CARD_MAYHEM,
                                         CARD_HAND_OF_GREED,
                                         CARD_FLASH_OF_STEEL,
                                         CARD_FORETHOUGHT,
                                         CARD_ENLIGHTENMENT,
                                         CARD_PURITY,
                                         CARD_PANACEA,
                                         CARD_TRANSMUTATION,
                                         CARD_CHRYSALIS,
                                         CARD_DISCOVERY,
                                         CARD_FINESSE,
                                         CARD_MAGNETISM,
                                         CARD_MASTER_OF_STRATEGY,
                                         CARD_GOOD_INSTINCTS,
                                         CARD_SWIFT_STRIKE,
                                         CARD_JACK_OF_ALL_TRADES,
                                         CARD_METAMORPHOSIS,
                                         CARD_MIND_BLAST,
                                         CARD_THINKING_AHEAD,
                                         CARD_MADNESS};
_Static_assert(sizeof colorless_pool == CARD_LAST_COLORLESS - CARD_FIRST_COLORLESS + 1,
               "every colorless card is in the pool once");

int combat_random_colorless(sf_combat *c) {
    uint8_t list[sizeof colorless_pool];
    int n = 0;
    for (int i = (int)sizeof colorless_pool - 1; i >= 0; i--)
        if (!(sf_cards[colorless_pool[i]].flags & CD_HEALING))
            list[n++] = colorless_pool[i];
    return list[sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), n - 1)];
}

void combat_discover(sf_combat *c, int kind, int pool) {
    sf_pending *p = &c->pending;
    memset(p->offer, 0, sizeof p->offer);
    for (int n = 0; n < SF_OFFER_N;) {
        int id =
            pool == DISCOVER_COLORLESS ? combat_random_colorless(c) : combat_random_card(c, pool);
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= p->offer[i].id == id;
        if (!dup)
            p->offer[n++] = combat_make_card(c, id, 0);
    }
    combat_open_choice(c, kind, 0);
}

int combat_random_card(sf_combat *c, int type) {
    static const int rarities[3] = {RAR_COMMON, RAR_UNCOMMON, RAR_RARE};
    uint8_t list[96];
    int n = 0;
    for (int r = 0; r < 3; r++) {
        int pn = 0;
        const uint8_t *pool = run_card_pool(rarities[r], &pn);
        for (int i = pn - 1; i >= 0 && n < (int)sizeof list; i--) {
            const card_def *d = &sf_cards[pool[i]];
            if ((type < 0 || d->type == type) && !(d->flags & CD_HEALING))
                list[n++] = pool[i];
        }
    }
    if (n == 0)
        return CARD_NONE;
    return list[sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), n - 1)];
}
