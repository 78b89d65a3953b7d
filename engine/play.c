/*
 * play.c — the turn: playing a card (with its onUseCard hooks, Double Tap
 * copies, Havoc's top card and choice screens), ending the turn, the
 * monster phase, the end of round and the next turn's start.
 *
 * Source: facts sheet §2.2–§2.5 (GameActionManager, AbstractPlayer.useCard,
 * UseCardAction, AbstractRoom.endTurn, MonsterGroup). The game's action queue
 * is replaced by direct calls in the order the queue would run them.
 */
#include "engine/internal.h"

/* ------------------------------------------------------------------------
 * Playing a card
 * ---------------------------------------------------------------------- */

int play_can_play(const sf_combat *c, int i) {
    if (c->phase != PH_PLAYER || i < 0 || i >= c->hand_n)
        return 0;
    const sf_card *k = &c->hand[i];
    const card_def *d = &sf_cards[k->id];
    if (!d->play || k->cost == COST_UNPLAYABLE)
        return 0;
    int cost = combat_card_cost(c, k);
    if (cost != COST_X && cost > c->energy)
        return 0;
    if (d->type == CT_ATTACK && c->pw[PW_ENTANGLED] > 0)
        return 0;
    if (k->id == CARD_CLASH) {
        for (int j = 0; j < c->hand_n; j++)
            if (sf_cards[c->hand[j].id].type != CT_ATTACK)
                return 0;
    }
    return 1;
}

static void resolve_card(sf_combat *c);

/* Start the play of c->pending.card at `target` (onUseCard hooks, effect). */
static void begin_play(sf_combat *c) {
    sf_pending *p = &c->pending;
    const card_def *d = &sf_cards[p->card.id];
    c->cards_played++;
    c->cards_played_total++;
    if (d->type == CT_ATTACK)
        c->attacks_played++;

    /* Player powers onUseCard (UseCardAction constructor). */
    if (d->type == CT_ATTACK && c->pw[PW_RAGE] > 0)
        combat_gain_block(c, c->pw[PW_RAGE]);
    if (d->type == CT_ATTACK && !p->copy && c->pw[PW_DOUBLE_TAP] > 0) {
        c->pw[PW_DOUBLE_TAP]--;
        p->repeats++;
    }
    /* Monster powers onUseCard: Enrage lands before the card's actions. */
    if (d->type == CT_SKILL)
        for (int m = 0; m < c->n_mon; m++)
            if (combat_alive(c, m) && c->mon[m].pw[PW_ENRAGE] > 0)
                c->mon[m].pw[PW_STR] = (int16_t)(c->mon[m].pw[PW_STR] + c->mon[m].pw[PW_ENRAGE]);

    /* A queued play whose target died retargets at random (cardRandomRng). */
    int t = p->target;
    if (d->target == TGT_ENEMY && !combat_alive(c, t)) {
        t = combat_random_monster(c);
        p->target = (uint8_t)(t < 0 ? SF_NO_TARGET : t);
        if (t < 0) {
            resolve_card(c);
            return;
        }
    }

    if (p->card.id == CARD_HAVOC) {
        /* Havoc: play the top card of the draw pile at a random enemy
         * (picked now); it exhausts. It plays after Havoc resolves. */
        int tgt = combat_random_monster(c);
        sf_card top;
        if (combat_pop_draw(c, &top)) {
            p->next = top;
            p->next_target = (uint8_t)(tgt < 0 ? SF_NO_TARGET : tgt);
            p->has_next = 1;
        }
    } else {
        sf_card k = p->card;
        d->play(c, &k, t);
    }
    if (c->phase == PH_CHOICE)
        return; /* resumed by play_choose() */
    resolve_card(c);
}

static int exhausts(const sf_combat *c, const sf_pending *p) {
    const card_def *d = &sf_cards[p->card.id];
    if (p->forced_exhaust || (d->flags & CD_EXHAUST))
        return 1;
    if ((d->flags & CD_EXHAUST_BASE) && p->card.upg == 0)
        return 1;
    return c->pw[PW_CORRUPTION] > 0 && d->type == CT_SKILL;
}

/* After the card's own actions: deferred monster reactions, Sharp Hide,
 * Vigor / Pen Nib consumption, attack-count relics, then the card moves. */
static void resolve_card(sf_combat *c) {
    sf_pending *p = &c->pending;
    const card_def *d = &sf_cards[p->card.id];

    monsters_after_card(c);
    if (d->type == CT_ATTACK) {
        for (int m = 0; m < c->n_mon && c->phase != PH_OVER; m++)
            if (combat_alive(c, m) && c->mon[m].pw[PW_SHARP_HIDE] > 0)
                combat_damage_player(c, c->mon[m].pw[PW_SHARP_HIDE], DT_THORNS, m);
        c->pw[PW_VIGOR] = 0;
        if (c->pw[PW_PEN_NIB] > 0)
            c->pw[PW_PEN_NIB] = 0;
        relics_on_attack_played(c);
    }

    /* UseCardAction: the card moves (a Double Tap copy is purged). */
    if (!p->copy) {
        sf_card k = p->card;
        k.flags &= (uint8_t)~CF_FREE_TURN;
        if (d->type == CT_POWER)
            ; /* powers leave play */
        else if (exhausts(c, p))
            combat_exhaust_card(c, k);
        else
            combat_add_to_discard(c, k);
    }
    combat_check_end(c);

    if (p->repeats > 0 && c->phase == PH_PLAYER) {
        p->repeats--;
        p->copy = 1;
        p->forced_exhaust = 0;
        begin_play(c);
        return;
    }
    if (p->has_next && c->phase == PH_PLAYER) {
        sf_card next = p->next;
        int tgt = p->next_target;
        memset(p, 0, sizeof *p);
        p->active = 1;
        p->card = next;
        p->target = (uint8_t)tgt;
        p->forced_exhaust = 1;
        const card_def *nd = &sf_cards[next.id];
        if (!nd->play || next.cost == COST_UNPLAYABLE ||
            (nd->type == CT_ATTACK && c->pw[PW_ENTANGLED] > 0)) {
            /* an unplayable top card is exhausted without effect */
            memset(p, 0, sizeof *p);
            combat_exhaust_card(c, next);
            combat_check_end(c);
            return;
        }
        p->x = c->energy; /* X-cost via Havoc: X = energy, none spent */
        begin_play(c);
        return;
    }
    memset(p, 0, sizeof *p);
}

int play_from_hand(sf_combat *c, int i, int target) {
    if (!play_can_play(c, i))
        return SF_EINVAL;
    const card_def *d = &sf_cards[c->hand[i].id];
    if (d->target == TGT_ENEMY) {
        if (!combat_alive(c, target))
            return SF_EINVAL;
    } else if (target != SF_NO_TARGET) {
        return SF_EINVAL;
    }
    sf_pending *p = &c->pending;
    memset(p, 0, sizeof *p);
    int cost = combat_card_cost(c, &c->hand[i]);
    p->card = combat_remove_hand(c, i);
    p->target = (uint8_t)target;
    p->active = 1;
    if (cost == COST_X) {
        p->x = c->energy;
        c->energy = 0;
    } else {
        c->energy = (uint8_t)(c->energy - cost);
    }
    begin_play(c);
    return SF_OK;
}

int play_choose(sf_combat *c, int option) {
    if (c->phase != PH_CHOICE)
        return SF_EINVAL;
    int rc = combat_choose(c, option);
    if (rc < 0)
        return rc;
    resolve_card(c);
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * End of turn, monster phase, end of round, next turn
 * ---------------------------------------------------------------------- */

static void discard_hand(sf_combat *c) {
    /* DiscardAtEndOfTurnAction: Ethereal cards are exhausted first; Dark
     * Embrace's draws from those exhausts are queued behind the discard, so
     * the drawn cards stay in hand. */
    int dark = c->pw[PW_DARK_EMBRACE];
    c->pw[PW_DARK_EMBRACE] = 0;
    int exhausted = 0;
    for (int i = 0; i < c->hand_n;) {
        if (sf_cards[c->hand[i].id].flags & CD_ETHEREAL) {
            combat_exhaust_from_hand(c, i);
            exhausted++;
        } else {
            i++;
        }
    }
    while (c->hand_n > 0) {
        sf_card k = combat_remove_hand(c, 0);
        combat_add_to_discard(c, k);
    }
    c->pw[PW_DARK_EMBRACE] = (int16_t)dark;
    /* resetAttributes: "costs 0 this turn" ends everywhere */
    for (int i = 0; i < c->draw_n; i++)
        c->draw[i].flags &= (uint8_t)~CF_FREE_TURN;
    for (int i = 0; i < c->discard_n; i++)
        c->discard[i].flags &= (uint8_t)~CF_FREE_TURN;
    if (dark > 0 && exhausted > 0 && combat_alive_count(c) > 0)
        combat_draw(c, dark * exhausted);
}

static void tick(int16_t *v, uint8_t *just, int bit) {
    if (*v <= 0)
        return;
    if (*just & bit) {
        *just &= (uint8_t)~bit;
        return;
    }
    (*v)--;
}

static void end_of_round(sf_combat *c) {
    /* 1. monsters atEndOfTurn: Metallicize block */
    for (int m = 0; m < c->n_mon; m++) {
        sf_monster *mo = &c->mon[m];
        if (combat_alive(c, m) && mo->pw[PW_METALLICIZE] > 0) {
            int b = mo->block + mo->pw[PW_METALLICIZE];
            mo->block = (int16_t)(b > 999 ? 999 : b);
        }
    }
    /* 2. the player's atEndOfRound: Weak, Vulnerable, Frail, Intangible */
    tick(&c->pw[PW_WEAK], &c->just, JA_WEAK);
    tick(&c->pw[PW_VULN], &c->just, JA_VULN);
    tick(&c->pw[PW_FRAIL], &c->just, JA_FRAIL);
    if (c->pw[PW_INTANGIBLE] > 0)
        c->pw[PW_INTANGIBLE]--;
    /* 3. monsters' atEndOfRound: Weak, Vulnerable, Ritual */
    for (int m = 0; m < c->n_mon; m++) {
        sf_monster *mo = &c->mon[m];
        if (!combat_alive(c, m))
            continue;
        tick(&mo->pw[PW_WEAK], &mo->just, JA_WEAK);
        tick(&mo->pw[PW_VULN], &mo->just, JA_VULN);
        if (mo->pw[PW_RITUAL] > 0) {
            if (mo->just & JA_RITUAL)
                mo->just &= (uint8_t)~JA_RITUAL;
            else
                mo->pw[PW_STR] = (int16_t)(mo->pw[PW_STR] + mo->pw[PW_RITUAL]);
        }
    }
}

static void monster_phase(sf_combat *c) {
    c->flags |= FL_TURN_ENDED;
    /* MonsterStartTurnAction: every monster loses its block at once. */
    for (int m = 0; m < c->n_mon; m++)
        c->mon[m].block = 0;
    for (;;) {
        int m = -1;
        for (int i = 0; i < c->n_mon; i++) {
            if (combat_alive(c, i) && !(c->mon[i].flags & (MF_ACTED | MF_NO_ACT))) {
                m = i;
                break;
            }
        }
        if (m < 0)
            break;
        c->mon[m].flags |= MF_ACTED;
        monster_take_turn(c, m);
        if (c->phase == PH_OVER)
            break;
    }
    for (int m = 0; m < c->n_mon; m++)
        c->mon[m].flags &= (uint8_t) ~(MF_ACTED | MF_NO_ACT);
}

/* Start of the player's turn 2+ (facts sheet §2.2). */
static void start_turn(sf_combat *c) {
    c->cards_played = 0;
    c->attacks_played = 0;
    int extra = 0;
    /* relics atTurnStart and powers atStartOfTurn queue energy that lands
     * after the recharge below */
    uint8_t before = c->energy;
    c->energy = 0;
    relics_at_turn_start(c);
    extra += c->energy;
    c->energy = before;
    extra += c->pw[PW_BERSERK];
    c->pw[PW_FLAME_BARRIER] = 0;
    c->turn = (uint8_t)(c->turn < 255 ? c->turn + 1 : 255);
    if (c->pw[PW_BARRICADE] == 0)
        c->block = 0;
    c->flags &= (uint8_t)~FL_TURN_ENDED;
    c->energy = (uint8_t)(3 + extra); /* recharge sets energy, then the queued gains */
    combat_draw(c, 5);
    if (c->phase == PH_OVER)
        return;
    /* atStartOfTurnPostDraw: Demon Form, Brutality */
    if (c->pw[PW_DEMON_FORM] > 0)
        combat_power_player(c, PW_STR, c->pw[PW_DEMON_FORM], 0);
    for (int i = 0; i < c->pw[PW_BRUTALITY] && c->phase != PH_OVER; i++) {
        combat_draw(c, 1);
        combat_lose_hp(c, 1);
    }
}

void play_end_turn(sf_combat *c) {
    /* 1. relics onPlayerEndTurn (Orichalcum), 2. Metallicize, Plated Armor */
    relics_on_player_end_turn(c);
    if (c->pw[PW_METALLICIZE] > 0)
        combat_gain_block(c, c->pw[PW_METALLICIZE]);
    if (c->pw[PW_PLATED] > 0)
        combat_gain_block(c, c->pw[PW_PLATED]);
    /* 3. every Burn in hand auto-plays: THORNS damage to the player, then
     * it goes to the discard pile (not counted as a card played) */
    for (int i = 0; i < c->hand_n && c->phase != PH_OVER;) {
        if (c->hand[i].id == CARD_BURN) {
            sf_card k = combat_remove_hand(c, i);
            combat_damage_player(c, k.upg ? 4 : 2, DT_THORNS, -1);
            combat_add_to_discard(c, k);
        } else {
            i++;
        }
    }
    if (c->phase == PH_OVER)
        return;
    /* 4. powers atEndOfTurn */
    if (c->pw[PW_COMBUST] > 0 && combat_alive_count(c) > 0) {
        combat_lose_hp(c, c->pw[PW_COMBUST_HP]);
        if (c->phase == PH_OVER)
            return;
        for (int m = 0; m < c->n_mon; m++)
            if (combat_alive(c, m))
                combat_thorns_to_monster(c, m, c->pw[PW_COMBUST]);
        combat_check_end(c);
        if (c->phase == PH_OVER)
            return;
    }
    if (c->pw[PW_LOSE_STR]) {
        c->pw[PW_STR] = (int16_t)(c->pw[PW_STR] - c->pw[PW_LOSE_STR]);
        c->pw[PW_LOSE_STR] = 0;
    }
    if (c->pw[PW_LOSE_DEX]) {
        c->pw[PW_DEX] = (int16_t)(c->pw[PW_DEX] - c->pw[PW_LOSE_DEX]);
        c->pw[PW_LOSE_DEX] = 0;
    }
    c->pw[PW_RAGE] = 0;
    c->pw[PW_DOUBLE_TAP] = 0;
    c->pw[PW_NO_DRAW] = 0;
    c->pw[PW_ENTANGLED] = 0;
    if (c->pw[PW_REGEN] > 0) {
        combat_heal(c, c->pw[PW_REGEN]);
        c->pw[PW_REGEN]--;
    }
    /* 5. discard the hand */
    discard_hand(c);
    /* 6. monsters act, 7. end of round, 8. next turn */
    monster_phase(c);
    if (c->phase == PH_OVER)
        return;
    end_of_round(c);
    combat_compact(c);
    start_turn(c);
}

/* Turn 1 (facts sheet §2.1 step 4): energy 3, relics atTurnStart, draw 5
 * plus any Innate cards beyond 5. No block removal, no post-draw powers. */
void play_first_turn(sf_combat *c) {
    c->turn = 1;
    c->energy = 3;
    int innate = 0;
    for (int i = 0; i < c->draw_n; i++)
        innate += (sf_cards[c->draw[i].id].flags & CD_INNATE_UP) && c->draw[i].upg > 0;
    combat_draw(c, 5 + (innate > 5 ? innate - 5 : 0));
    relics_at_battle_start(c);
    if (combat_has_relic(c, RELIC_LANTERN))
        c->energy++;
    relics_at_turn_start(c);
}
