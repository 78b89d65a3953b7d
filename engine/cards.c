/*
 * cards.c — the Ironclad card table: numbers as data, behaviour as one small
 * function per card whose effect is more than "deal damage / gain block".
 *
 * Every number is the game's (game-rules §3, §4: cards/red/<Name>.java;
 * status cards §4 "Status cards"). `play` runs after energy is paid and the
 * card has left the hand; the card then moves to discard, exhaust or (for
 * powers) nowhere, in play.c. Damage is always computed with
 * combat_card_damage() so Strength, Vigor, Pen Nib, Weak and Vulnerable
 * apply in the game's order.
 *
 * A card whose row alone does not say what it does also has an `x_` function
 * next to its `p_` effect: its prediction (card_pred, for the tokenizer's
 * playmath). Both take the card's computed numbers (Perfected Strike's
 * count, Searing Blow's damage, Twin Strike's hits, Offering's HP, ...) from
 * the same helper or constant, so the prediction follows a rule change.
 */
#include "engine/internal.h"

/* ---- shared effect pieces ---------------------------------------------- */

static void hit(sf_combat *c, const sf_card *k, int target, int base) {
    if (!combat_alive(c, target))
        return;
    combat_player_hits(c, target, combat_card_damage(c, k, base, target));
}

static void hit_all(sf_combat *c, const sf_card *k, int base) {
    /* DamageAllEnemiesAction: damage computed per monster at play time. */
    int dmg[SF_MAX_MONSTERS];
    for (int m = 0; m < c->n_mon; m++)
        dmg[m] = combat_card_damage(c, k, base, m);
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            combat_player_hits(c, m, dmg[m]);
}

static void block(sf_combat *c, int base) {
    combat_gain_block(c, combat_card_block(c, base));
}

static void debuff_all(sf_combat *c, int pw, int amount) {
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            combat_power_monster(c, m, pw, amount);
}

static int is_attack(const sf_card *k) {
    return sf_cards[k->id].type == CT_ATTACK;
}

/* Exhaust every non-Attack in hand; returns the count. The game queues one
 * ExhaustSpecificCardAction per card on top of the queue, in hand order, so
 * they run last card first. */
static int exhaust_non_attacks(sf_combat *c) {
    int n = 0;
    for (int i = c->hand_n - 1; i >= 0; i--) {
        if (is_attack(&c->hand[i]))
            continue;
        combat_exhaust_from_hand(c, i);
        n++;
    }
    return n;
}

/* ---- plain effects ------------------------------------------------------ */

static void p_damage(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
}
static void p_damage_all(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    hit_all(c, k, CARD_NUM(k, dmg));
}
static void p_block(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
}
static void p_multi_hit(sf_combat *c, const sf_card *k, int t) {
    for (int i = 0; i < CARD_NUM(k, mag); i++)
        hit(c, k, t, CARD_NUM(k, dmg));
}
static void p_nothing(sf_combat *c, const sf_card *k, int t) {
    (void)c, (void)k, (void)t;
}
static void x_multi_hit(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->hits = CARD_NUM(k, mag);
}

/* ---- starter ------------------------------------------------------------ */

static void p_bash(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_power_monster(c, t, PW_VULN, CARD_NUM(k, mag));
}
static void x_bash(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->vuln = CARD_NUM(k, mag);
}

/* ---- common ------------------------------------------------------------- */

static void p_anger(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    sf_card copy = *k; /* makeStatEquivalentCopy */
    copy.flags &= (uint8_t)~CF_TURN_FLAGS;
    combat_add_new(c, ZONE_DISCARD, copy);
}

static void p_armaments(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
    if (k->upg) {
        /* ArmamentsAction(true): every card in hand that canUpgrade() */
        for (int i = 0; i < c->hand_n; i++)
            if (combat_can_upgrade(&c->hand[i]))
                combat_upgrade_card(&c->hand[i]);
    } else {
        combat_open_choice(c, CH_ARMAMENTS, 0);
    }
}

static void p_body_slam(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, c->block);
}
static void x_body_slam(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)k, (void)view;
    p->base = c->block;
}

static void p_clothesline(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_power_monster(c, t, PW_WEAK, CARD_NUM(k, mag));
}
static void x_clothesline(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->weak = CARD_NUM(k, mag);
}

static void p_flex(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_power_player(c, PW_STR, CARD_NUM(k, mag), 0);
    combat_power_player(c, PW_LOSE_STR, CARD_NUM(k, mag), 0); /* a debuff: Artifact eats it */
}

/* Havoc is resolved in play.c (it plays another card). */

static void p_headbutt(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_open_choice(c, CH_HEADBUTT, 0);
}

static void p_iron_wave(sf_combat *c, const sf_card *k, int t) {
    block(c, CARD_NUM(k, blk)); /* block once, first (game-rules §4) */
    hit(c, k, t, CARD_NUM(k, dmg));
}

/* PerfectedStrike.countCards: STRIKE-tagged cards in hand, draw and discard
 * piles when the damage is computed, plus the card itself when it counts
 * (`self`) without being in one of them: played from the hand, the card is
 * still in it then; a Double Tap copy or a card Havoc plays is in limbo and
 * does not count itself. */
static int perfected_strike_damage(const sf_combat *c, const sf_card *k, int self) {
    int n = self;
    const sf_card *piles[3] = {c->hand, c->draw, c->discard};
    int counts[3] = {c->hand_n, c->draw_n, c->discard_n};
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < counts[p]; i++)
            n += (sf_cards[piles[p][i].id].flags & CD_STRIKE) != 0;
    return CARD_NUM(k, dmg) + CARD_NUM(k, mag) * n;
}

static void p_perfected_strike(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, perfected_strike_damage(c, k, c->pending.from_hand));
}
/* In a pile or in hand the card already counts; from the exhaust pile it
 * would count once back. */
static void x_perfected_strike(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    p->base = perfected_strike_damage(c, k, view == CV_EXHAUST);
}

static void p_pommel_strike(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_draw(c, CARD_NUM(k, mag));
}

static void p_shrug(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
    combat_draw(c, 1);
}

/* Sword Boomerang's hits: x_multi_hit, at random monsters (AIM_RANDOM: the
 * row has no target). */
static void p_sword_boomerang(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < CARD_NUM(k, mag); i++) {
        int m = combat_random_monster(c);
        if (m < 0)
            break;
        hit(c, k, m, CARD_NUM(k, dmg));
    }
}

enum { THUNDERCLAP_VULN = 1 };

static void p_thunderclap(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    hit_all(c, k, CARD_NUM(k, dmg));
    debuff_all(c, PW_VULN, THUNDERCLAP_VULN);
}
static void x_thunderclap(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->vuln = THUNDERCLAP_VULN;
}

static void p_true_grit(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
    if (k->upg) {
        combat_open_choice(c, CH_TRUE_GRIT, 0);
    } else if (c->hand_n == 1) {
        /* ExhaustAction: a hand no bigger than the amount is exhausted whole,
         * without a random pick */
        combat_exhaust_from_hand(c, 0);
    } else if (c->hand_n > 1) {
        int i = sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), c->hand_n - 1);
        combat_exhaust_from_hand(c, i);
    }
}
/* True Grit and Burning Pact exhaust one other card (a random or a chosen
 * one: which is not known, that there is one is). */
static void x_exhaust_one(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->others = EXO_ONE;
}

enum { TWIN_STRIKE_HITS = 2 };

static void p_twin_strike(sf_combat *c, const sf_card *k, int t) {
    for (int i = 0; i < TWIN_STRIKE_HITS; i++)
        hit(c, k, t, CARD_NUM(k, dmg));
}
static void x_twin_strike(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->hits = TWIN_STRIKE_HITS;
}

static void p_warcry(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_draw(c, CARD_NUM(k, mag));
    combat_open_choice(c, CH_WARCRY, 0);
}

static void p_wild_strike(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_add_new(c, ZONE_DRAW, combat_make_card(c, CARD_WOUND, 0));
}

/* ---- uncommon ----------------------------------------------------------- */

static void p_battle_trance(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_draw(c, CARD_NUM(k, mag));
    combat_power_player(c, PW_NO_DRAW, 1, 0); /* a debuff: Artifact eats it */
}

enum { BLOODLETTING_HP = 3 };

static void p_bloodletting(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_lose_hp(c, BLOODLETTING_HP);
    c->energy = (uint8_t)(c->energy + CARD_NUM(k, mag));
}
static void x_bloodletting(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->self_hp = BLOODLETTING_HP;
}

static void p_burning_pact(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_open_choice(c, CH_BURNING_PACT, CARD_NUM(k, mag));
}

static void p_combust(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    c->pw[PW_COMBUST] = (int16_t)(c->pw[PW_COMBUST] + CARD_NUM(k, mag));
    c->pw[PW_COMBUST_HP]++;
}

static void p_power(sf_combat *c, int pw, int amount) {
    combat_power_player(c, pw, amount, 0);
}

static void p_dark_embrace(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    p_power(c, PW_DARK_EMBRACE, 1);
}

static void p_disarm(sf_combat *c, const sf_card *k, int t) {
    combat_power_monster(c, t, PW_STR, -CARD_NUM(k, mag));
}

static void p_dropkick(sf_combat *c, const sf_card *k, int t) {
    /* DropkickAction looks at Vulnerable first, then queues the damage, the
     * energy and the draw (all on top, in that order). */
    int vuln = combat_alive(c, t) && c->mon[t].pw[PW_VULN] > 0;
    hit(c, k, t, CARD_NUM(k, dmg));
    if (vuln) {
        c->energy++;
        combat_draw(c, 1);
    }
}

static void p_dual_wield(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_open_choice(c, CH_DUAL_WIELD, CARD_NUM(k, mag));
}

static void p_entrench(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    combat_gain_block(c, c->block);
}
static void x_entrench(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)k, (void)view;
    p->raw_block = c->block;
}

static void p_evolve(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_EVOLVE, CARD_NUM(k, mag));
}
static void p_feel_no_pain(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_FNP, CARD_NUM(k, mag));
}
static void p_fire_breathing(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_FIRE_BREATHING, CARD_NUM(k, mag));
}

static void p_flame_barrier(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
    p_power(c, PW_FLAME_BARRIER, CARD_NUM(k, mag));
}

static void p_hemokinesis(sf_combat *c, const sf_card *k, int t) {
    /* The damage is computed when the card is played; the HP loss comes
     * first but cannot change it (a Rupture or Red Skull Strength gained
     * from it counts from the next card on). */
    int dmg = combat_card_damage(c, k, CARD_NUM(k, dmg), t);
    combat_lose_hp(c, CARD_NUM(k, mag));
    if (c->phase != PH_OVER && combat_alive(c, t))
        combat_player_hits(c, t, dmg);
}
static void x_hemokinesis(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->self_hp = CARD_NUM(k, mag);
}

static void p_infernal_blade(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    int id = combat_random_attack(c);
    sf_card made = combat_make_card(c, id, 0);
    made.flags |= CF_FREE_TURN;
    combat_add_new(c, ZONE_HAND, made);
}

static void p_inflame(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_STR, CARD_NUM(k, mag));
}

static void p_intimidate(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    debuff_all(c, PW_WEAK, CARD_NUM(k, mag));
}

static void p_metallicize(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_METALLICIZE, CARD_NUM(k, mag));
}

static void p_power_through(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < 2; i++)
        combat_add_new(c, ZONE_HAND, combat_make_card(c, CARD_WOUND, 0));
    block(c, CARD_NUM(k, blk));
}

static void p_rage(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_RAGE, CARD_NUM(k, mag));
}

enum { RAMPAGE_MAX_BONUS = 250 }; /* what the card's misc byte keeps */

/* Rampage's bonus lives on the played card (misc), which play.c moves to
 * its pile afterwards; ModifyDamageAction raises every instance with the
 * card's uuid: the card in limbo and, when a Double Tap copy plays, the
 * original already in the discard pile (found as the last Rampage there
 * with the copy's numbers). */
static void p_rampage(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg) + k->misc);
    if (!c->pending.active || c->pending.card.id != CARD_RAMPAGE)
        return;
    sf_card before = c->pending.card;
    int bonus = before.misc + CARD_NUM(k, mag);
    c->pending.card.misc = (uint8_t)(bonus > RAMPAGE_MAX_BONUS ? RAMPAGE_MAX_BONUS : bonus);
    if (c->pending.copy) {
        for (int i = c->discard_n - 1; i >= 0; i--) {
            sf_card *o = &c->discard[i];
            if (o->id == CARD_RAMPAGE && o->upg == before.upg && o->misc == before.misc) {
                o->misc = c->pending.card.misc;
                break;
            }
        }
    }
}
static void x_rampage(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->base = CARD_NUM(k, dmg) + k->misc;
    p->grow = CARD_NUM(k, mag);
    if (k->misc + p->grow > RAMPAGE_MAX_BONUS)
        p->grow = k->misc > RAMPAGE_MAX_BONUS ? 0 : RAMPAGE_MAX_BONUS - k->misc;
}

static void p_reckless_charge(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_add_new(c, ZONE_DRAW, combat_make_card(c, CARD_DAZED, 0));
}

static void p_rupture(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_RUPTURE, CARD_NUM(k, mag));
}

/* SearingBlow: 12, +4 for the first upgrade, then one more each time
 * (12 + n(n+7)/2 after n upgrades). */
static int searing_blow_damage(const sf_card *k) {
    int n = k->upg;
    return 12 + n * (n + 7) / 2;
}

static void p_searing_blow(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, searing_blow_damage(k));
}
static void x_searing_blow(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->base = searing_blow_damage(k);
}

static void p_second_wind(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    /* BlockPerNonAttackAction: the exhausts first, then one separate block
     * gain per card (Juggernaut fires per gain), the amount fixed at play. */
    int per = combat_card_block(c, CARD_NUM(k, blk));
    int n = exhaust_non_attacks(c);
    for (int i = 0; i < n; i++)
        combat_gain_block(c, per);
}
static int exhausted_others(const sf_combat *c, const sf_card *k, int view, int others);

/* One block gain per card exhausted. */
static void x_second_wind(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    p->others = EXO_NON_ATTACKS;
    p->gains = exhausted_others(c, k, view, EXO_NON_ATTACKS);
}

static void p_seeing_red(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    c->energy = (uint8_t)(c->energy + 2);
}

static void p_sever_soul(sf_combat *c, const sf_card *k, int t) {
    int dmg = combat_card_damage(c, k, CARD_NUM(k, dmg), t); /* fixed at play */
    exhaust_non_attacks(c);
    if (combat_alive(c, t))
        combat_player_hits(c, t, dmg);
}
static void x_sever_soul(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->others = EXO_NON_ATTACKS;
}

static void p_shockwave(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    debuff_all(c, PW_WEAK, CARD_NUM(k, mag));
    debuff_all(c, PW_VULN, CARD_NUM(k, mag));
}

static void p_spot_weakness(sf_combat *c, const sf_card *k, int t) {
    int hits = 0;
    if (combat_alive(c, t) && monster_intent_damage(c, t, &hits) >= 0 && hits > 0)
        p_power(c, PW_STR, CARD_NUM(k, mag));
}

static void p_uppercut(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, CARD_NUM(k, dmg));
    combat_power_monster(c, t, PW_WEAK, CARD_NUM(k, mag));
    combat_power_monster(c, t, PW_VULN, CARD_NUM(k, mag));
}
/* Weak first: an Artifact stops the Weak, and the Vulnerable lands. */
static void x_uppercut(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->weak = p->vuln = CARD_NUM(k, mag);
}

/* Whirlwind's X is decided in play.c and passed in pending.x: the energy the
 * player has when it is played from the hand (a Double Tap copy repeats it). */
static void p_whirlwind(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < c->pending.x; i++)
        hit_all(c, k, CARD_NUM(k, dmg));
}
static void x_whirlwind(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)k, (void)view;
    p->hits = c->energy + relics_x_bonus(c);
}

/* ---- rare --------------------------------------------------------------- */

static void p_barricade(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    c->pw[PW_BARRICADE] = 1;
}

static void p_berserk(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_power_player(c, PW_VULN, CARD_NUM(k, mag), 0);
    c->pw[PW_BERSERK]++;
}

static void p_brutality(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    c->pw[PW_BRUTALITY]++;
}

static void p_corruption(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    c->pw[PW_CORRUPTION] = 1;
}

static void p_demon_form(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    c->pw[PW_DEMON_FORM] = (int16_t)(c->pw[PW_DEMON_FORM] + CARD_NUM(k, mag));
}

static void p_double_tap(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    c->pw[PW_DOUBLE_TAP] = (int16_t)(c->pw[PW_DOUBLE_TAP] + CARD_NUM(k, mag));
}

static void p_exhume(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    combat_open_choice(c, CH_EXHUME, 0);
}

static void p_feed(sf_combat *c, const sf_card *k, int t) {
    if (!combat_alive(c, t))
        return;
    hit(c, k, t, CARD_NUM(k, dmg));
    if (c->mon[t].flags & MF_DEAD) {
        int gain = CARD_NUM(k, mag);
        c->max_hp = (int16_t)(c->max_hp + gain);
        combat_heal(c, gain);
    }
}

/* FiendFireAction: counts the hand (the card has left it), then exhausts
 * that many cards one at a time, each a random pick (ExhaustAction(1,
 * random): cardRandomRng), then deals one hit per card counted. */
static void p_fiend_fire(sf_combat *c, const sf_card *k, int t) {
    int dmg = combat_card_damage(c, k, CARD_NUM(k, dmg), t);
    int n = c->hand_n;
    for (int i = 0; i < n && c->hand_n > 0; i++)
        combat_exhaust_from_hand(
            c, sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), c->hand_n - 1));
    for (int i = 0; i < n && combat_alive(c, t); i++)
        combat_player_hits(c, t, dmg);
}
static void x_fiend_fire(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)k;
    p->hits = c->hand_n - (view == CV_HAND);
    p->others = EXO_HAND;
}

static void p_immolate(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    hit_all(c, k, CARD_NUM(k, dmg));
    combat_add_new(c, ZONE_DISCARD, combat_make_card(c, CARD_BURN, 0));
}

static void p_juggernaut(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_JUGGERNAUT, CARD_NUM(k, mag));
}

static void p_limit_break(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    if (c->pw[PW_STR] != 0)
        combat_power_player(c, PW_STR, c->pw[PW_STR], 0);
}

enum { OFFERING_HP = 6 };

static void p_offering(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_lose_hp(c, OFFERING_HP);
    if (c->phase == PH_OVER)
        return;
    c->energy = (uint8_t)(c->energy + 2);
    combat_draw(c, CARD_NUM(k, mag));
}
static void x_offering(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)k, (void)view;
    p->self_hp = OFFERING_HP;
}

static void p_reaper(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    int dmg[SF_MAX_MONSTERS], total = 0;
    for (int m = 0; m < c->n_mon; m++)
        dmg[m] = combat_card_damage(c, k, CARD_NUM(k, dmg), m);
    for (int m = 0; m < c->n_mon; m++)
        if (combat_alive(c, m))
            total += combat_player_hits(c, m, dmg[m]);
    combat_heal(c, total);
}

/* ---- colorless (cards/colorless/<Name>.java) ----------------------------
 * The pool the Colorless Potion, Jack of All Trades, Magnetism and
 * Transmutation draw from (combat_random_colorless). */

static void p_bandage_up(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_heal(c, CARD_NUM(k, mag));
}

/* Blind, Trip: the debuff on the target, or on every monster once
 * upgraded (card_target: TGT_ALL). */
static void debuff_target(sf_combat *c, const sf_card *k, int t, int pw) {
    if (card_target(k) == TGT_ALL)
        debuff_all(c, pw, CARD_NUM(k, mag));
    else
        combat_power_monster(c, t, pw, CARD_NUM(k, mag));
}
static void p_blind(sf_combat *c, const sf_card *k, int t) {
    debuff_target(c, k, t, PW_WEAK);
}
static void p_trip(sf_combat *c, const sf_card *k, int t) {
    debuff_target(c, k, t, PW_VULN);
}

/* DarkShackles: Artifact is looked at when the card is played: with it the
 * Strength loss is blocked and no GainStrengthPower ("Shackled") follows. */
static void p_dark_shackles(sf_combat *c, const sf_card *k, int t) {
    if (!combat_alive(c, t))
        return;
    int artifact = c->mon[t].pw[PW_ARTIFACT] > 0;
    combat_power_monster(c, t, PW_STR, -CARD_NUM(k, mag));
    if (!artifact)
        combat_power_monster(c, t, PW_SHACKLED, CARD_NUM(k, mag));
}

/* DeepBreath: with a discard pile, EmptyDeckShuffleAction then
 * ShuffleAction(drawPile); then the draw. */
static void p_deep_breath(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    if (c->discard_n > 0)
        combat_shuffle_discard_into_draw(c);
    combat_draw(c, CARD_NUM(k, mag));
}

/* Discovery: DiscoveryAction() over every Ironclad card type. */
static void p_discovery(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    combat_discover(c, CH_DISCOVERY_CARD, -1);
}

/* A card's cost this turn (costForTurn): 0 when it is free this turn, at
 * most 1 after Enlightenment; X and unplayable stay negative. */
static int cost_for_turn(const sf_card *h) {
    if (h->cost < 0)
        return h->cost;
    if (h->flags & CF_FREE_TURN)
        return 0;
    if ((h->flags & CF_ONE_TURN) && h->cost > 1)
        return 1;
    return h->cost;
}

/* EnlightenmentAction: every hand card costing more than 1 this turn costs
 * 1 this turn; upgraded, a cost above 1 also becomes 1 for the combat. */
static void p_enlightenment(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < c->hand_n; i++) {
        sf_card *h = &c->hand[i];
        if (cost_for_turn(h) > 1)
            h->flags |= CF_ONE_TURN;
        if (k->upg && h->cost > 1)
            h->cost = 1;
    }
}

/* ForethoughtAction: one card (any number once upgraded) to the bottom of
 * the draw pile, free to play once if its cost is above 0. */
static void p_forethought(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_open_choice(c, k->upg ? CH_FORETHOUGHT_ANY : CH_FORETHOUGHT, 0);
}

/* ConditionalDrawAction(n, ATTACK): draw only with no Attack in hand. */
static void p_impatience(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < c->hand_n; i++)
        if (is_attack(&c->hand[i]))
            return;
    combat_draw(c, CARD_NUM(k, mag));
}

/* JackOfAllTrades: one random colorless card to the hand (two upgraded),
 * all drawn when the card is played. */
static void p_jack_of_all_trades(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    int ids[4], n = CARD_NUM(k, mag);
    for (int i = 0; i < n && i < 4; i++)
        ids[i] = combat_random_colorless(c);
    for (int i = 0; i < n && i < 4; i++)
        combat_add_new(c, ZONE_HAND, combat_make_card(c, ids[i], 0));
}

/* MadnessAction: a random hand card (hand.getRandomCard(cardRandomRng),
 * drawn again until it fits) whose cost this turn is above 0, or failing
 * any, whose cost is above 0, costs 0 for the rest of the combat. */
static void p_madness(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    int better = 0, possible = 0;
    for (int i = 0; i < c->hand_n; i++) {
        if (cost_for_turn(&c->hand[i]) > 0)
            better = 1;
        else if (c->hand[i].cost > 0)
            possible = 1;
    }
    if (!better && !possible)
        return;
    for (;;) {
        sf_card *h = &c->hand[sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), c->hand_n - 1)];
        if (better ? cost_for_turn(h) > 0 : h->cost > 0) {
            h->cost = 0;
            h->flags &= (uint8_t)~CF_ONE_TURN;
            return;
        }
    }
}

/* MindBlast: its damage is the draw pile's size when it is played. */
static void p_mind_blast(sf_combat *c, const sf_card *k, int t) {
    hit(c, k, t, c->draw_n);
}
static void x_mind_blast(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)k, (void)view;
    p->base = c->draw_n;
}

static void p_panacea(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_ARTIFACT, CARD_NUM(k, mag));
}

/* PanicButton: the block first (computed before NoBlockPower lands), then
 * NoBlockPower (a debuff: Artifact can stop it). */
static void p_panic_button(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    block(c, CARD_NUM(k, blk));
    p_power(c, PW_NO_BLOCK, CARD_NUM(k, mag));
}
/* Its copy (Duplication) gains no block. */
static void x_panic_button(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    (void)c, (void)view;
    p->no_block = CARD_NUM(k, mag);
}

/* ExhaustAction(n, false, anyNumber, canPickZero): up to n hand cards. */
static void p_purity(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_open_choice(c, CH_PURITY, CARD_NUM(k, mag));
}

/* ApotheosisAction: every card that canUpgrade in hand, draw, discard and
 * exhaust piles is upgraded. */
static void upgrade_pile(sf_card *pile, int n) {
    for (int i = 0; i < n; i++)
        if (combat_can_upgrade(&pile[i]))
            combat_upgrade_card(&pile[i]);
}
static void p_apotheosis(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    upgrade_pile(c->hand, c->hand_n);
    upgrade_pile(c->draw, c->draw_n);
    upgrade_pile(c->discard, c->discard_n);
    upgrade_pile(c->exhaust, c->exhaust_n);
}

/* Chrysalis, Metamorphosis: n random cards of a type
 * (returnTrulyRandomCardInCombat, all drawn at play) costing 0 for the
 * combat when their cost is above 0, each to a random spot of the draw
 * pile (MakeTempCardInDrawPileAction, randomSpot). */
static void random_to_draw(sf_combat *c, const sf_card *k, int type) {
    int ids[8], n = CARD_NUM(k, mag);
    if (n > 8)
        n = 8;
    for (int i = 0; i < n; i++)
        ids[i] = combat_random_card(c, type);
    for (int i = 0; i < n; i++) {
        sf_card made = combat_make_card(c, ids[i], 0);
        if (made.cost > 0)
            made.cost = 0;
        combat_add_new(c, ZONE_DRAW, made);
    }
}
static void p_chrysalis(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    random_to_draw(c, k, CT_SKILL);
}
static void p_metamorphosis(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    random_to_draw(c, k, CT_ATTACK);
}

/* GreedAction: the hit, then gold if it killed the monster (no Act-1
 * monster is a Minion or half dead). */
static void p_hand_of_greed(sf_combat *c, const sf_card *k, int t) {
    if (!combat_alive(c, t))
        return;
    hit(c, k, t, CARD_NUM(k, dmg));
    if (c->mon[t].flags & MF_DEAD) {
        int g = c->gold + CARD_NUM(k, mag);
        c->gold = (int16_t)(g > INT16_MAX ? INT16_MAX : g);
    }
}

static void p_magnetism(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_MAGNETISM, CARD_NUM(k, mag));
}

static void p_draw(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    combat_draw(c, CARD_NUM(k, mag));
}

static void p_mayhem(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_MAYHEM, CARD_NUM(k, mag));
}

/* PanachePower: a new one counts 5 cards from now; another Panache adds its
 * damage and leaves the count. */
static void p_panache(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    if (c->pw[PW_PANACHE] == 0)
        c->pw[PW_PANACHE_CNT] = PANACHE_CARDS;
    c->pw[PW_PANACHE] = (int16_t)(c->pw[PW_PANACHE] + CARD_NUM(k, mag));
}

static void p_sadistic_nature(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    p_power(c, PW_SADISTIC, CARD_NUM(k, mag));
}

/* SkillFromDeckToHandAction / AttackFromDeckToHandAction(1): the draw
 * pile's cards of the type are gathered with addToRandomSpot (one
 * cardRandomRng draw for each after the first); one is moved to the hand at
 * once, several open a choice (CH_SECRET_*). canUse needs one (play.c). */
static void secret(sf_combat *c, int type, int kind) {
    int n = 0, at = -1;
    for (int i = 0; i < c->draw_n; i++) {
        if (sf_cards[c->draw[i].id].type != type)
            continue;
        if (n > 0)
            (void)sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), n - 1);
        at = i;
        n++;
    }
    if (n == 1) {
        sf_card got;
        combat_remove_draw(c, at, &got);
        combat_add_to_hand(c, &got); /* a full hand: to the discard pile */
    } else if (n > 1) {
        combat_open_choice(c, kind, 0);
    }
}
static void p_secret_technique(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    secret(c, CT_SKILL, CH_SECRET_SKILL);
}
static void p_secret_weapon(sf_combat *c, const sf_card *k, int t) {
    (void)k, (void)t;
    secret(c, CT_ATTACK, CH_SECRET_ATTACK);
}

enum { BOMB_TURNS = 3 }; /* TheBombPower(owner, 3, damage) */

/* TheBombPower: each bomb counts down at the end of the player's turn and
 * explodes at the end of the third (play.c); bombs due the same turn are
 * summed (PW_BOMB_3: due in three turns). */
static void p_the_bomb(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    _Static_assert(PW_BOMB_3 - PW_BOMB_1 + 1 == BOMB_TURNS, "one slot per turn to go");
    c->pw[PW_BOMB_3] = (int16_t)(c->pw[PW_BOMB_3] + CARD_NUM(k, mag));
}

/* ThinkingAhead: DrawCardAction(2), then PutOnDeckAction(1) only if the
 * hand held a card when it was played (checked before the draw). */
static void p_thinking_ahead(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    int had = c->hand_n > 0;
    combat_draw(c, CARD_NUM(k, mag));
    if (had)
        combat_open_choice(c, CH_WARCRY, 0);
}

/* TransmutationAction: X random colorless cards (upgraded when the card
 * is), each free this turn (setCostForTurn(0): not an X-cost card). */
static void p_transmutation(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    for (int i = 0; i < c->pending.x; i++) {
        sf_card made = combat_make_card(c, combat_random_colorless(c), k->upg ? 1 : 0);
        if (made.cost >= 0)
            made.flags |= CF_FREE_TURN;
        combat_add_new(c, ZONE_HAND, made);
    }
}

/* DrawPileToHandAction(n, ATTACK): the draw pile's Attacks gathered with
 * addToRandomSpot (cardRandomRng), then n times: the group shuffled
 * (shuffleRng), its bottom card to the hand (a full hand: to the discard
 * pile). */
static void p_violence(sf_combat *c, const sf_card *k, int t) {
    (void)t;
    uint8_t grp[SF_MAX_PILE];
    int n = 0;
    for (int i = 0; i < c->draw_n; i++) {
        if (!is_attack(&c->draw[i]))
            continue;
        int at = n == 0 ? 0 : sf_rng_random(combat_rng(c, SF_STREAM_CARD_RANDOM), n - 1);
        memmove(&grp[at + 1], &grp[at], (size_t)(n - at));
        grp[at] = (uint8_t)i;
        n++;
    }
    for (int r = 0; r < CARD_NUM(k, mag) && n > 0; r++) {
        combat_java_shuffle(c, grp, n, sizeof grp[0]);
        int pos = grp[0];
        memmove(&grp[0], &grp[1], (size_t)(n - 1));
        n--;
        for (int i = 0; i < n; i++)
            if (grp[i] > pos)
                grp[i]--;
        sf_card got;
        combat_remove_draw(c, pos, &got);
        combat_add_to_hand(c, &got);
    }
}

static void p_demon_dummy(sf_combat *c, const sf_card *k, int t) {
    p_nothing(c, k, t);
}

/* ---- the table ----------------------------------------------------------
 * name, type, rarity, target, flags, cost, cost+, dmg, dmg+, blk, blk+, mag,
 * mag+, priority, play, predict. Priorities: a rollout plays high numbers
 * first (powers and free draw early, attacks and block by value, statuses
 * last). Burn's magic number is the THORNS damage it deals the player at the
 * end of the turn (play.c).
 */
#define ATK CT_ATTACK
#define SKL CT_SKILL
#define PWR CT_POWER
#define STS CT_STATUS
/* clang-format off */
const card_def sf_cards[CARD_COUNT] = {
    [CARD_NONE] = {"(none)", STS, RAR_SPECIAL, TGT_NONE, 0, COST_UNPLAYABLE, COST_UNPLAYABLE, 0, 0, 0, 0, 0, 0, 0, NULL, NULL},
    [CARD_STRIKE] = {"Strike", ATK, RAR_BASIC, TGT_ENEMY, CD_STRIKE, 1, 1, 6, 9, 0, 0, 0, 0, 40, p_damage, NULL},
    [CARD_DEFEND] = {"Defend", SKL, RAR_BASIC, TGT_NONE, 0, 1, 1, 0, 0, 5, 8, 0, 0, 35, p_block, NULL},
    [CARD_BASH] = {"Bash", ATK, RAR_BASIC, TGT_ENEMY, 0, 2, 2, 8, 10, 0, 0, 2, 3, 60, p_bash, x_bash},
    [CARD_ANGER] = {"Anger", ATK, RAR_COMMON, TGT_ENEMY, 0, 0, 0, 6, 8, 0, 0, 0, 0, 55, p_anger, NULL},
    [CARD_ARMAMENTS] = {"Armaments", SKL, RAR_COMMON, TGT_NONE, 0, 1, 1, 0, 0, 5, 5, 0, 0, 45, p_armaments, NULL},
    [CARD_BODY_SLAM] = {"Body Slam", ATK, RAR_COMMON, TGT_ENEMY, 0, 1, 0, 0, 0, 0, 0, 0, 0, 30, p_body_slam, x_body_slam},
    [CARD_CLASH] = {"Clash", ATK, RAR_COMMON, TGT_ENEMY, 0, 0, 0, 14, 18, 0, 0, 0, 0, 60, p_damage, NULL},
    [CARD_CLEAVE] = {"Cleave", ATK, RAR_COMMON, TGT_ALL, 0, 1, 1, 8, 11, 0, 0, 0, 0, 50, p_damage_all, NULL},
    [CARD_CLOTHESLINE] = {"Clothesline", ATK, RAR_COMMON, TGT_ENEMY, 0, 2, 2, 12, 14, 0, 0, 2, 3, 50, p_clothesline, x_clothesline},
    [CARD_FLEX] = {"Flex", SKL, RAR_COMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 2, 4, 75, p_flex, NULL},
    [CARD_HAVOC] = {"Havoc", SKL, RAR_COMMON, TGT_NONE, 0, 1, 0, 0, 0, 0, 0, 0, 0, 45, p_demon_dummy, NULL},
    [CARD_HEADBUTT] = {"Headbutt", ATK, RAR_COMMON, TGT_ENEMY, 0, 1, 1, 9, 12, 0, 0, 0, 0, 45, p_headbutt, NULL},
    [CARD_HEAVY_BLADE] = {"Heavy Blade", ATK, RAR_COMMON, TGT_ENEMY, 0, 2, 2, 14, 14, 0, 0, 3, 5, 45, p_damage, NULL},
    [CARD_IRON_WAVE] = {"Iron Wave", ATK, RAR_COMMON, TGT_ENEMY, 0, 1, 1, 5, 7, 5, 7, 0, 0, 45, p_iron_wave, NULL},
    [CARD_PERFECTED_STRIKE] = {"Perfected Strike", ATK, RAR_COMMON, TGT_ENEMY, CD_STRIKE, 2, 2, 6, 6, 0, 0, 2, 3, 50, p_perfected_strike, x_perfected_strike},
    [CARD_POMMEL_STRIKE] = {"Pommel Strike", ATK, RAR_COMMON, TGT_ENEMY, CD_STRIKE, 1, 1, 9, 10, 0, 0, 1, 2, 60, p_pommel_strike, NULL},
    [CARD_SHRUG_IT_OFF] = {"Shrug It Off", SKL, RAR_COMMON, TGT_NONE, 0, 1, 1, 0, 0, 8, 11, 0, 0, 60, p_shrug, NULL},
    [CARD_SWORD_BOOMERANG] = {"Sword Boomerang", ATK, RAR_COMMON, TGT_NONE, 0, 1, 1, 3, 3, 0, 0, 3, 4, 45, p_sword_boomerang, x_multi_hit},
    [CARD_THUNDERCLAP] = {"Thunderclap", ATK, RAR_COMMON, TGT_ALL, 0, 1, 1, 4, 7, 0, 0, 0, 0, 55, p_thunderclap, x_thunderclap},
    [CARD_TRUE_GRIT] = {"True Grit", SKL, RAR_COMMON, TGT_NONE, 0, 1, 1, 0, 0, 7, 9, 0, 0, 40, p_true_grit, x_exhaust_one},
    [CARD_TWIN_STRIKE] = {"Twin Strike", ATK, RAR_COMMON, TGT_ENEMY, CD_STRIKE, 1, 1, 5, 7, 0, 0, 0, 0, 50, p_twin_strike, x_twin_strike},
    [CARD_WARCRY] = {"Warcry", SKL, RAR_COMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 1, 2, 55, p_warcry, NULL},
    [CARD_WILD_STRIKE] = {"Wild Strike", ATK, RAR_COMMON, TGT_ENEMY, CD_STRIKE, 1, 1, 12, 17, 0, 0, 0, 0, 45, p_wild_strike, NULL},
    [CARD_BATTLE_TRANCE] = {"Battle Trance", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 3, 4, 80, p_battle_trance, NULL},
    [CARD_BLOOD_FOR_BLOOD] = {"Blood for Blood", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 4, 3, 18, 22, 0, 0, 0, 0, 55, p_damage, NULL},
    [CARD_BLOODLETTING] = {"Bloodletting", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 2, 3, 70, p_bloodletting, x_bloodletting},
    [CARD_BURNING_PACT] = {"Burning Pact", SKL, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 2, 3, 50, p_burning_pact, x_exhaust_one},
    [CARD_CARNAGE] = {"Carnage", ATK, RAR_UNCOMMON, TGT_ENEMY, CD_ETHEREAL, 2, 2, 20, 28, 0, 0, 0, 0, 65, p_damage, NULL},
    [CARD_COMBUST] = {"Combust", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 5, 7, 80, p_combust, NULL},
    [CARD_DARK_EMBRACE] = {"Dark Embrace", PWR, RAR_UNCOMMON, TGT_NONE, 0, 2, 1, 0, 0, 0, 0, 0, 0, 80, p_dark_embrace, NULL},
    [CARD_DISARM] = {"Disarm", SKL, RAR_UNCOMMON, TGT_ENEMY, CD_EXHAUST, 1, 1, 0, 0, 0, 0, 2, 3, 65, p_disarm, NULL},
    [CARD_DROPKICK] = {"Dropkick", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 1, 1, 5, 8, 0, 0, 0, 0, 50, p_dropkick, NULL},
    [CARD_DUAL_WIELD] = {"Dual Wield", SKL, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 1, 2, 50, p_dual_wield, NULL},
    [CARD_ENTRENCH] = {"Entrench", SKL, RAR_UNCOMMON, TGT_NONE, 0, 2, 1, 0, 0, 0, 0, 0, 0, 30, p_entrench, x_entrench},
    [CARD_EVOLVE] = {"Evolve", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 1, 2, 75, p_evolve, NULL},
    [CARD_FEEL_NO_PAIN] = {"Feel No Pain", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 3, 4, 80, p_feel_no_pain, NULL},
    [CARD_FIRE_BREATHING] = {"Fire Breathing", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 6, 10, 75, p_fire_breathing, NULL},
    [CARD_FLAME_BARRIER] = {"Flame Barrier", SKL, RAR_UNCOMMON, TGT_NONE, 0, 2, 2, 0, 0, 12, 16, 4, 6, 55, p_flame_barrier, NULL},
    [CARD_GHOSTLY_ARMOR] = {"Ghostly Armor", SKL, RAR_UNCOMMON, TGT_NONE, CD_ETHEREAL, 1, 1, 0, 0, 10, 13, 0, 0, 50, p_block, NULL},
    [CARD_HEMOKINESIS] = {"Hemokinesis", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 1, 1, 15, 20, 0, 0, 2, 2, 55, p_hemokinesis, x_hemokinesis},
    [CARD_INFERNAL_BLADE] = {"Infernal Blade", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 1, 0, 0, 0, 0, 0, 0, 0, 55, p_infernal_blade, NULL},
    [CARD_INFLAME] = {"Inflame", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 2, 3, 85, p_inflame, NULL},
    [CARD_INTIMIDATE] = {"Intimidate", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 1, 2, 70, p_intimidate, NULL},
    [CARD_METALLICIZE] = {"Metallicize", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 3, 4, 80, p_metallicize, NULL},
    [CARD_POWER_THROUGH] = {"Power Through", SKL, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 15, 20, 0, 0, 45, p_power_through, NULL},
    [CARD_PUMMEL] = {"Pummel", ATK, RAR_UNCOMMON, TGT_ENEMY, CD_EXHAUST, 1, 1, 2, 2, 0, 0, 4, 5, 50, p_multi_hit, x_multi_hit},
    [CARD_RAGE] = {"Rage", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 3, 5, 70, p_rage, NULL},
    [CARD_RAMPAGE] = {"Rampage", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 1, 1, 8, 8, 0, 0, 5, 8, 50, p_rampage, x_rampage},
    [CARD_RECKLESS_CHARGE] = {"Reckless Charge", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 0, 0, 7, 10, 0, 0, 0, 0, 55, p_reckless_charge, NULL},
    [CARD_RUPTURE] = {"Rupture", PWR, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 1, 2, 70, p_rupture, NULL},
    [CARD_SEARING_BLOW] = {"Searing Blow", ATK, RAR_UNCOMMON, TGT_ENEMY, CD_MULTI_UPGRADE, 2, 2, 12, 16, 0, 0, 0, 0, 50, p_searing_blow, x_searing_blow},
    [CARD_SECOND_WIND] = {"Second Wind", SKL, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 5, 7, 0, 0, 35, p_second_wind, x_second_wind},
    [CARD_SEEING_RED] = {"Seeing Red", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 1, 0, 0, 0, 0, 0, 0, 0, 60, p_seeing_red, NULL},
    [CARD_SENTINEL] = {"Sentinel", SKL, RAR_UNCOMMON, TGT_NONE, 0, 1, 1, 0, 0, 5, 8, 0, 0, 40, p_block, NULL},
    [CARD_SEVER_SOUL] = {"Sever Soul", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 2, 2, 16, 22, 0, 0, 0, 0, 40, p_sever_soul, x_sever_soul},
    [CARD_SHOCKWAVE] = {"Shockwave", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 2, 2, 0, 0, 0, 0, 3, 5, 70, p_shockwave, NULL},
    [CARD_SPOT_WEAKNESS] = {"Spot Weakness", SKL, RAR_UNCOMMON, TGT_ENEMY, 0, 1, 1, 0, 0, 0, 0, 3, 4, 70, p_spot_weakness, NULL},
    [CARD_UPPERCUT] = {"Uppercut", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 2, 2, 13, 13, 0, 0, 1, 2, 60, p_uppercut, x_uppercut},
    [CARD_WHIRLWIND] = {"Whirlwind", ATK, RAR_UNCOMMON, TGT_ALL, 0, COST_X, COST_X, 5, 8, 0, 0, 0, 0, 45, p_whirlwind, x_whirlwind},
    [CARD_BARRICADE] = {"Barricade", PWR, RAR_RARE, TGT_NONE, 0, 3, 2, 0, 0, 0, 0, 0, 0, 60, p_barricade, NULL},
    [CARD_BERSERK] = {"Berserk", PWR, RAR_RARE, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 2, 1, 75, p_berserk, NULL},
    [CARD_BLUDGEON] = {"Bludgeon", ATK, RAR_RARE, TGT_ENEMY, 0, 3, 3, 32, 42, 0, 0, 0, 0, 55, p_damage, NULL},
    [CARD_BRUTALITY] = {"Brutality", PWR, RAR_RARE, TGT_NONE, CD_INNATE_UP, 0, 0, 0, 0, 0, 0, 0, 0, 70, p_brutality, NULL},
    [CARD_CORRUPTION] = {"Corruption", PWR, RAR_RARE, TGT_NONE, 0, 3, 2, 0, 0, 0, 0, 0, 0, 75, p_corruption, NULL},
    [CARD_DEMON_FORM] = {"Demon Form", PWR, RAR_RARE, TGT_NONE, 0, 3, 3, 0, 0, 0, 0, 2, 3, 90, p_demon_form, NULL},
    [CARD_DOUBLE_TAP] = {"Double Tap", SKL, RAR_RARE, TGT_NONE, 0, 1, 1, 0, 0, 0, 0, 1, 2, 65, p_double_tap, NULL},
    [CARD_EXHUME] = {"Exhume", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 1, 0, 0, 0, 0, 0, 0, 0, 45, p_exhume, NULL},
    [CARD_FEED] = {"Feed", ATK, RAR_RARE, TGT_ENEMY, CD_EXHAUST | CD_HEALING, 1, 1, 10, 12, 0, 0, 3, 4, 50, p_feed, NULL},
    [CARD_FIEND_FIRE] = {"Fiend Fire", ATK, RAR_RARE, TGT_ENEMY, CD_EXHAUST, 2, 2, 7, 10, 0, 0, 0, 0, 35, p_fiend_fire, x_fiend_fire},
    [CARD_IMMOLATE] = {"Immolate", ATK, RAR_RARE, TGT_ALL, 0, 2, 2, 21, 28, 0, 0, 0, 0, 60, p_immolate, NULL},
    [CARD_IMPERVIOUS] = {"Impervious", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 2, 2, 0, 0, 30, 40, 0, 0, 55, p_block, NULL},
    [CARD_JUGGERNAUT] = {"Juggernaut", PWR, RAR_RARE, TGT_NONE, 0, 2, 2, 0, 0, 0, 0, 5, 7, 75, p_juggernaut, NULL},
    [CARD_LIMIT_BREAK] = {"Limit Break", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST_BASE, 1, 1, 0, 0, 0, 0, 0, 0, 50, p_limit_break, NULL},
    [CARD_OFFERING] = {"Offering", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 3, 5, 70, p_offering, x_offering},
    [CARD_REAPER] = {"Reaper", ATK, RAR_RARE, TGT_ALL, CD_EXHAUST | CD_HEALING, 2, 2, 4, 5, 0, 0, 0, 0, 45, p_reaper, NULL},
    [CARD_SLIMED] = {"Slimed", STS, RAR_SPECIAL, TGT_NONE, CD_EXHAUST, 1, 1, 0, 0, 0, 0, 0, 0, 5, p_nothing, NULL},
    [CARD_DAZED] = {"Dazed", STS, RAR_SPECIAL, TGT_NONE, CD_ETHEREAL, COST_UNPLAYABLE, COST_UNPLAYABLE, 0, 0, 0, 0, 0, 0, 0, NULL, NULL},
    [CARD_WOUND] = {"Wound", STS, RAR_SPECIAL, TGT_NONE, 0, COST_UNPLAYABLE, COST_UNPLAYABLE, 0, 0, 0, 0, 0, 0, 0, NULL, NULL},
    [CARD_BURN] = {"Burn", STS, RAR_SPECIAL, TGT_NONE, 0, COST_UNPLAYABLE, COST_UNPLAYABLE, 0, 0, 0, 0, 2, 4, 0, NULL, NULL},
    [CARD_BANDAGE_UP] = {"Bandage Up", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST | CD_HEALING, 0, 0, 0, 0, 0, 0, 4, 6, 50, p_bandage_up, NULL},
    [CARD_BLIND] = {"Blind", SKL, RAR_UNCOMMON, TGT_ENEMY, CD_ALL_UP, 0, 0, 0, 0, 0, 0, 2, 2, 60, p_blind, NULL},
    [CARD_DARK_SHACKLES] = {"Dark Shackles", SKL, RAR_UNCOMMON, TGT_ENEMY, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 9, 15, 60, p_dark_shackles, NULL},
    [CARD_DEEP_BREATH] = {"Deep Breath", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 1, 2, 55, p_deep_breath, NULL},
    [CARD_DISCOVERY] = {"Discovery", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST_BASE, 1, 1, 0, 0, 0, 0, 0, 0, 65, p_discovery, NULL},
    [CARD_DRAMATIC_ENTRANCE] = {"Dramatic Entrance", ATK, RAR_UNCOMMON, TGT_ALL, CD_EXHAUST | CD_INNATE, 0, 0, 8, 12, 0, 0, 0, 0, 65, p_damage_all, NULL},
    [CARD_ENLIGHTENMENT] = {"Enlightenment", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60, p_enlightenment, NULL},
    [CARD_FINESSE] = {"Finesse", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 2, 4, 0, 0, 55, p_shrug, NULL},
    [CARD_FLASH_OF_STEEL] = {"Flash of Steel", ATK, RAR_UNCOMMON, TGT_ENEMY, 0, 0, 0, 3, 6, 0, 0, 1, 1, 60, p_pommel_strike, NULL},
    [CARD_FORETHOUGHT] = {"Forethought", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, p_forethought, NULL},
    [CARD_GOOD_INSTINCTS] = {"Good Instincts", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 6, 9, 0, 0, 45, p_block, NULL},
    [CARD_IMPATIENCE] = {"Impatience", SKL, RAR_UNCOMMON, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 2, 3, 55, p_impatience, NULL},
    [CARD_JACK_OF_ALL_TRADES] = {"Jack of All Trades", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 1, 2, 60, p_jack_of_all_trades, NULL},
    [CARD_MADNESS] = {"Madness", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 1, 0, 0, 0, 0, 0, 0, 0, 55, p_madness, NULL},
    [CARD_MIND_BLAST] = {"Mind Blast", ATK, RAR_UNCOMMON, TGT_ENEMY, CD_INNATE, 2, 1, 0, 0, 0, 0, 0, 0, 45, p_mind_blast, x_mind_blast},
    [CARD_PANACEA] = {"Panacea", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 1, 2, 50, p_panacea, NULL},
    [CARD_PANIC_BUTTON] = {"Panic Button", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 30, 40, 2, 2, 40, p_panic_button, x_panic_button},
    [CARD_PURITY] = {"Purity", SKL, RAR_UNCOMMON, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 3, 5, 35, p_purity, NULL},
    [CARD_SWIFT_STRIKE] = {"Swift Strike", ATK, RAR_UNCOMMON, TGT_ENEMY, CD_STRIKE, 0, 0, 7, 10, 0, 0, 0, 0, 60, p_damage, NULL},
    [CARD_TRIP] = {"Trip", SKL, RAR_UNCOMMON, TGT_ENEMY, CD_ALL_UP, 0, 0, 0, 0, 0, 0, 2, 2, 60, p_trip, NULL},
    [CARD_APOTHEOSIS] = {"Apotheosis", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 2, 1, 0, 0, 0, 0, 0, 0, 70, p_apotheosis, NULL},
    [CARD_CHRYSALIS] = {"Chrysalis", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 2, 2, 0, 0, 0, 0, 3, 5, 55, p_chrysalis, NULL},
    [CARD_HAND_OF_GREED] = {"Hand of Greed", ATK, RAR_RARE, TGT_ENEMY, 0, 2, 2, 20, 25, 0, 0, 20, 25, 55, p_hand_of_greed, NULL},
    [CARD_MAGNETISM] = {"Magnetism", PWR, RAR_RARE, TGT_NONE, 0, 2, 1, 0, 0, 0, 0, 1, 1, 75, p_magnetism, NULL},
    [CARD_MASTER_OF_STRATEGY] = {"Master of Strategy", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 3, 4, 80, p_draw, NULL},
    [CARD_MAYHEM] = {"Mayhem", PWR, RAR_RARE, TGT_NONE, 0, 2, 1, 0, 0, 0, 0, 1, 1, 70, p_mayhem, NULL},
    [CARD_METAMORPHOSIS] = {"Metamorphosis", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 2, 2, 0, 0, 0, 0, 3, 5, 55, p_metamorphosis, NULL},
    [CARD_PANACHE] = {"Panache", PWR, RAR_RARE, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 10, 14, 75, p_panache, NULL},
    [CARD_SADISTIC_NATURE] = {"Sadistic Nature", PWR, RAR_RARE, TGT_NONE, 0, 0, 0, 0, 0, 0, 0, 5, 7, 70, p_sadistic_nature, NULL},
    [CARD_SECRET_TECHNIQUE] = {"Secret Technique", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST_BASE, 0, 0, 0, 0, 0, 0, 0, 0, 55, p_secret_technique, NULL},
    [CARD_SECRET_WEAPON] = {"Secret Weapon", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST_BASE, 0, 0, 0, 0, 0, 0, 0, 0, 55, p_secret_weapon, NULL},
    [CARD_THE_BOMB] = {"The Bomb", SKL, RAR_RARE, TGT_NONE, 0, 2, 2, 0, 0, 0, 0, 40, 50, 60, p_the_bomb, NULL},
    [CARD_THINKING_AHEAD] = {"Thinking Ahead", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST_BASE, 0, 0, 0, 0, 0, 0, 2, 2, 55, p_thinking_ahead, NULL},
    [CARD_TRANSMUTATION] = {"Transmutation", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, COST_X, COST_X, 0, 0, 0, 0, 0, 0, 50, p_transmutation, NULL},
    [CARD_VIOLENCE] = {"Violence", SKL, RAR_RARE, TGT_NONE, CD_EXHAUST, 0, 0, 0, 0, 0, 0, 3, 4, 60, p_violence, NULL},
};
/* clang-format on */

/* ---- exhausting and predicting ------------------------------------------ */

int card_exhausts(const sf_combat *c, const sf_card *k) {
    const card_def *d = &sf_cards[k->id];
    if (d->flags & CD_EXHAUST)
        return 1;
    if ((d->flags & CD_EXHAUST_BASE) && k->upg == 0)
        return 1;
    if (d->type == CT_STATUS && combat_has_relic(c, RELIC_MEDICAL_KIT))
        return 1; /* MedicalKit.onUseCard: a used status exhausts */
    return c->pw[PW_CORRUPTION] > 0 && d->type == CT_SKILL; /* CorruptionPower */
}

int card_end_turn_damage(const sf_card *k) {
    return k->id == CARD_BURN ? CARD_NUM(k, mag) : 0;
}

/* How many cards in hand a play of `k` exhausts besides itself (`others`:
 * EXO_*); a card predicted from the hand is not one of them. */
static int exhausted_others(const sf_combat *c, const sf_card *k, int view, int others) {
    int self = view == CV_HAND;
    switch (others) {
    case EXO_NON_ATTACKS: {
        int n = 0;
        for (int i = 0; i < c->hand_n; i++)
            n += !is_attack(&c->hand[i]);
        return n - (self && !is_attack(k));
    }
    case EXO_HAND: return c->hand_n - self;
    case EXO_ONE: return c->hand_n - self > 0;
    default: return 0;
    }
}

void card_predict(const sf_combat *c, const sf_card *k, int view, card_pred *p) {
    const card_def *d = &sf_cards[k->id];
    memset(p, 0, sizeof *p);
    if (d->type == CT_ATTACK) {
        p->base = CARD_NUM(k, dmg);
        p->hits = 1;
        p->aim = card_target(k) == TGT_NONE ? AIM_RANDOM : card_target(k);
    }
    p->block = CARD_NUM(k, blk);
    p->gains = 1;
    p->exhausts = card_exhausts(c, k);
    if (d->predict)
        d->predict(c, k, view, p);
    if (p->hits < 0)
        p->hits = 0;
    p->exhausted = exhausted_others(c, k, view, p->others);
}
