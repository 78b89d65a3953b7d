/*
 * play.c — the turn: playing a card (with its onUseCard hooks, Double Tap
 * copies, Havoc's top card and choice screens), ending the turn, the
 * monster phase, the end of round and the next turn's start.
 *
 * Source: game-rules §2.2–§2.5 (GameActionManager, AbstractPlayer.useCard,
 * UseCardAction, AbstractRoom.endTurn, MonsterGroup). The game's action queue
 * is replaced by direct calls in the order the queue would run them.
 */
#include "engine/internal.h"

/* ------------------------------------------------------------------------
 * Playing a card
 * ---------------------------------------------------------------------- */

static int clash_ok(const sf_combat *c);
static int can_use(const sf_combat *c, const sf_card *k);

int play_can_play(const sf_combat *c, int i) {
    if (c->phase != PH_PLAYER || i < 0 || i >= c->hand_n)
        return 0;
    const sf_card *k = &c->hand[i];
    const card_def *d = &sf_cards[k->id];
    if ((!d->play && !relics_status_playable(c, k)) || combat_card_cost(c, k) == COST_UNPLAYABLE)
        return 0;
    int cost = combat_card_cost(c, k);
    if (cost != COST_X && cost > c->energy)
        return 0;
    return can_use(c, k);
}

static void resolve_card(sf_combat *c);

/* 1 if the draw pile holds a card of type `type`. */
static int draw_has(const sf_combat *c, int type) {
    for (int i = 0; i < c->draw_n; i++)
        if (sf_cards[c->draw[i].id].type == type)
            return 1;
    return 0;
}

/* The cards' canUse beyond energy: Entangled stops Attacks; Clash needs a
 * hand of Attacks; Secret Technique and Secret Weapon need a Skill or an
 * Attack in the draw pile. */
static int can_use(const sf_combat *c, const sf_card *k) {
    if (sf_cards[k->id].type == CT_ATTACK && c->pw[PW_ENTANGLED] > 0)
        return 0;
    if (k->id == CARD_CLASH && !clash_ok(c))
        return 0;
    if (k->id == CARD_SECRET_TECHNIQUE && !draw_has(c, CT_SKILL))
        return 0;
    if (k->id == CARD_SECRET_WEAPON && !draw_has(c, CT_ATTACK))
        return 0;
    return 1;
}

/* Clash.canUse: every card in hand is an Attack (Clash itself counts when
 * played from the hand). */
static int clash_ok(const sf_combat *c) {
    for (int j = 0; j < c->hand_n; j++)
        if (sf_cards[c->hand[j].id].type != CT_ATTACK)
            return 0;
    return 1;
}

/* Start the play of c->pending.card at pending.target: the card queue's
 * onPlayCard bookkeeping, then AbstractPlayer.useCard (damage is computed
 * now, inside each card's effect, from the powers of this moment), then the
 * hooks the game runs in the UseCardAction constructor that act at once
 * (Double Tap's copy, Nob's Enrage added to the top). */
static int exhausts(const sf_combat *c, const sf_pending *p) {
    return p->forced_exhaust || card_exhausts(c, &p->card);
}

static void begin_play(sf_combat *c) {
    sf_pending *p = &c->pending;
    const card_def *d = &sf_cards[p->card.id];
    int t = p->target;

    /* A queued play (Double Tap's copy, Havoc's or Distilled Chaos's card)
     * whose enemy target is dead by now is not played: the copy is purged;
     * an autoplayed card cannot be used (cardPlayable: the target is
     * dying), so GameActionManager.getNextAction hands it to a UseCardAction
     * that triggers nothing and moves it like a used card: to the exhaust
     * pile when it exhausts (Havoc's exhaustOnUseOnce, the card's own
     * Exhaust), else to the discard pile. */
    if (card_target(&p->card) == TGT_ENEMY && !combat_alive(c, t)) {
        if (!p->copy) {
            sf_card k = p->card;
            k.flags &= (uint8_t)~CF_ALL_FLAGS;
            if (exhausts(c, p) && !relics_spoon_keeps(c, &k))
                combat_exhaust_card(c, k);
            else
                combat_add_to_discard(c, &k);
        }
        sf_pending rest = *p;
        memset(p, 0, sizeof *p);
        combat_drain(c);
        combat_check_end(c);
        if (rest.queue_n > 0 && c->phase == PH_PLAYER) {
            memcpy(p->queue, rest.queue, sizeof p->queue);
            memcpy(p->queue_target, rest.queue_target, sizeof p->queue_target);
            p->queue_n = rest.queue_n;
            p->queue_exhaust = rest.queue_exhaust;
            play_next_queued(c);
        }
        return;
    }

    c->cards_played++;
    c->cards_played_total++;
    if (d->type == CT_ATTACK)
        c->attacks_played++;

    /* Monsters' onUseCard that act before the card's own actions: Enrage
     * adds Strength to the top of the queue. Sharp Hide's damage is queued
     * now, behind the card: remember who will answer. */
    p->sharp = 0;
    for (int m = 0; m < c->n_mon; m++) {
        if (!combat_alive(c, m))
            continue;
        if (d->type == CT_SKILL && c->mon[m].pw[PW_ENRAGE] > 0)
            c->mon[m].pw[PW_STR] = (int16_t)(c->mon[m].pw[PW_STR] + c->mon[m].pw[PW_ENRAGE]);
        if (d->type == CT_ATTACK && c->mon[m].pw[PW_SHARP_HIDE] > 0)
            p->sharp |= (uint8_t)(1u << m);
    }
    /* Double Tap: an Attack that is not itself a copy queues one copy.
     * Duplication (DuplicationPower.onUseCard): any card that is not
     * itself a copy queues one copy. Copies play before queued cards. */
    if (d->type == CT_ATTACK && !p->copy && c->pw[PW_DOUBLE_TAP] > 0) {
        c->pw[PW_DOUBLE_TAP]--;
        p->repeats++;
    }
    if (!p->copy && c->pw[PW_DUPLICATION] > 0) {
        c->pw[PW_DUPLICATION]--;
        p->repeats++;
    }
    /* PanachePower.onUseCard (the UseCardAction constructor, once the
     * card's actions are queued): the fifth card queues THORNS damage to
     * every monster behind them (resolve_card). */
    if (c->pw[PW_PANACHE] > 0 && --c->pw[PW_PANACHE_CNT] <= 0) {
        c->pw[PW_PANACHE_CNT] = PANACHE_CARDS;
        p->panache = (uint8_t)(c->pw[PW_PANACHE] > 255 ? 255 : c->pw[PW_PANACHE]);
    }

    if (p->card.id == CARD_HAVOC) {
        /* Havoc: the target is picked now (cardRandomRng); PlayTopCardAction
         * then takes the top card (reshuffling first if the draw pile is
         * empty), which plays after Havoc resolves and exhausts. */
        int tgt = combat_random_monster(c);
        if (p->queue_n >= SF_CARD_QUEUE) {
            /* more autoplays waiting than the queue holds (Havocs copied
             * by Duplication behind Distilled Chaos's cards): the fight
             * ends as an engine-limit loss, as a full pile does */
            c->engine_limit = 1;
            combat_stop(c);
            memset(p, 0, sizeof *p);
            return;
        }
        if (play_queue_top(c, tgt))
            p->queue_exhaust |= (uint8_t)(1u << (p->queue_n - 1));
    } else {
        sf_card k = p->card;
        if (d->play) /* NULL: a status Medical Kit lets the player use */
            d->play(c, &k, t);
    }
    if (c->phase == PH_CHOICE)
        return; /* resumed by play_choose() */
    resolve_card(c);
}

/* The played card exhausts by its own rule (card_exhausts), or because Havoc
 * played it. */
void play_attack_hooks(sf_combat *c) {
    if (c->pw[PW_RAGE] > 0)
        combat_gain_block(c, c->pw[PW_RAGE]);
    c->pw[PW_VIGOR] = 0;
    c->pw[PW_PEN_NIB] = 0;
    relics_on_attack_played(c);
}

/* Sharp Hide's THORNS damage was queued before the card's actions ran, so
 * it lands even if they killed the Guardian. */
int play_sharp_hide(sf_combat *c, unsigned sharp) {
    int lost = 0;
    for (int m = 0; m < c->n_mon && c->hp > 0; m++)
        if (sharp & (1u << m))
            lost += combat_damage_player(c, c->mon[m].pw[PW_SHARP_HIDE], DT_THORNS, m);
    return lost;
}

/* After the card's own actions, in the game's queue order: the actions the
 * UseCardAction constructor queued behind them (player powers: Rage; relics:
 * Pen Nib, Kunai, Shuriken, Ornamental Fan; monster powers: Sharp Hide), the
 * UseCardAction itself (the card moves), then whatever the card's actions
 * queued at the bottom (Curl Up, Mode Shift, Feel No Pain, Dark Embrace,
 * Juggernaut, ...). Only then does the card queue play Double Tap's copy or
 * Havoc's card. */
static void resolve_card(sf_combat *c) {
    sf_pending *p = &c->pending;
    const card_def *d = &sf_cards[p->card.id];

    if (p->panache) {
        int dmg = p->panache;
        p->panache = 0;
        combat_thorns_all(c, dmg);
    }
    if (d->type == CT_ATTACK) {
        play_attack_hooks(c);
        play_sharp_hide(c, p->sharp);
    }
    /* the relics' onUseCard actions that draw, heal, deal damage or read a
     * random stream (queued ahead of the UseCardAction too) */
    if (c->phase != PH_OVER)
        relics_on_card_played(c, d->type);

    /* UseCardAction: the card moves (a Double Tap copy is purged). */
    if (!p->copy) {
        sf_card k = p->card;
        k.flags &= (uint8_t)~CF_ALL_FLAGS; /* UseCardAction: freeToPlayOnce ends */
        if (d->type == CT_POWER) {
            if (c->cards_removed < 0xFFFF)
                c->cards_removed++; /* powers leave play */
        } else if (exhausts(c, p) && !relics_spoon_keeps(c, &k)) {
            combat_exhaust_card(c, k);
        } else {
            combat_add_to_discard(c, &k);
        }
    }
    combat_drain(c);
    combat_check_end(c);

    if (p->repeats > 0 && c->phase == PH_PLAYER) {
        p->repeats--;
        p->copy = 1;
        p->from_hand = 0;
        p->forced_exhaust = 0;
        begin_play(c);
        return;
    }
    if (p->queue_n > 0 && c->phase == PH_PLAYER) {
        play_next_queued(c);
        return;
    }
    memset(p, 0, sizeof *p);
}

/* The card queue's next autoplay (GameActionManager.getNextAction): the
 * first queued card plays at its target, X = all energy, none spent. When
 * canUse fails (unplayable, Entangled, Clash) it moves without effect
 * (UseCardAction): Havoc's card, or one that exhausts itself, to the
 * exhaust pile; otherwise Distilled Chaos's to the discard pile. */
int play_queue_top(sf_combat *c, int target) {
    sf_pending *p = &c->pending;
    sf_card top;
    if (!combat_pop_draw(c, &top))
        return 0;
    p->queue[p->queue_n] = top;
    p->queue_target[p->queue_n] = (uint8_t)(target < 0 ? SF_NO_TARGET : target);
    p->queue_n++;
    return 1;
}

void play_next_queued(sf_combat *c) {
    sf_pending *p = &c->pending;
    while (p->queue_n > 0 && c->phase == PH_PLAYER) {
        sf_card next = p->queue[0];
        int tgt = p->queue_target[0];
        int exhaust = p->queue_exhaust & 1u;
        sf_pending rest = *p;
        memset(p, 0, sizeof *p);
        for (int i = 1; i < rest.queue_n; i++) {
            p->queue[i - 1] = rest.queue[i];
            p->queue_target[i - 1] = rest.queue_target[i];
        }
        p->queue_n = (uint8_t)(rest.queue_n - 1);
        p->queue_exhaust = (uint8_t)(rest.queue_exhaust >> 1);
        p->active = 1;
        p->card = next;
        p->target = (uint8_t)tgt;
        p->forced_exhaust = (uint8_t)exhaust;
        const card_def *nd = &sf_cards[next.id];
        if ((!nd->play && !relics_status_playable(c, &next)) ||
            combat_card_cost(c, &next) == COST_UNPLAYABLE || !can_use(c, &next)) {
            /* canUse fails: the card moves without effect, exhausted when
             * Havoc played it or it exhausts itself (UseCardAction) */
            p->active = 0;
            memset(&p->card, 0, sizeof p->card);
            if ((exhaust || card_exhausts(c, &next)) && !relics_spoon_keeps(c, &next))
                combat_exhaust_card(c, next);
            else
                combat_add_to_discard(c, &next);
            combat_drain(c);
            combat_check_end(c);
            continue;
        }
        p->x =
            c->energy + relics_x_bonus(c); /* an autoplayed X-cost card: X = energy, none spent */
        begin_play(c);
        return;
    }
    if (c->phase != PH_CHOICE && !p->active)
        memset(p, 0, sizeof *p);
}

int play_from_hand(sf_combat *c, int i, int target) {
    if (!play_can_play(c, i))
        return SF_EINVAL;
    if (card_target(&c->hand[i]) == TGT_ENEMY) {
        if (!combat_alive(c, target))
            return SF_EINVAL;
    } else if (target != SF_NO_TARGET) {
        return SF_EINVAL;
    }
    sf_pending *p = &c->pending;
    memset(p, 0, sizeof *p);
    int cost = combat_card_cost(c, &c->hand[i]);
    combat_remove_hand(c, i, &p->card);
    p->target = (uint8_t)target;
    p->active = 1;
    p->from_hand = 1;
    if (cost == COST_X) {
        p->x = c->energy + relics_x_bonus(c);
        c->energy = 0;
    } else {
        c->energy = (uint8_t)(c->energy - cost);
    }
    begin_play(c);
    return SF_OK;
}

static void first_turn_draw(sf_combat *c, int on_top);

int play_choose(sf_combat *c, int option) {
    if (c->phase != PH_CHOICE)
        return SF_EINVAL;
    int kind = c->pending.kind, on_top = c->pending.amount;
    int rc = combat_choose(c, option);
    if (rc < 0)
        return rc;
    if (kind == CH_TOOLBOX) { /* the battle start goes on: the opening draw */
        memset(&c->pending, 0, sizeof c->pending);
        first_turn_draw(c, on_top);
        return SF_OK;
    }
    if (c->phase == PH_CHOICE)
        return SF_OK; /* a multi-select screen waits for its next pick */
    if (c->pending.active)
        resolve_card(c);
    else
        potion_after_choice(c);
    return SF_OK;
}

/* ------------------------------------------------------------------------
 * End of turn, monster phase, end of round, next turn
 * ---------------------------------------------------------------------- */

/* DiscardAtEndOfTurnAction: Ethereal cards are exhausted first (the game
 * orders them with an unseeded shuffle; we use hand order), then the rest of
 * the hand is discarded one DiscardAction at a time, each taking the top
 * (last) card of the hand, so the discard pile receives them last card
 * first. What the exhausts queued (Feel No Pain, Dark Embrace's draw) runs
 * after the discards, so drawn cards stay in hand. */
static void discard_hand(sf_combat *c) {
    for (int i = 0; i < c->hand_n;) {
        if (sf_cards[c->hand[i].id].flags & CD_ETHEREAL)
            combat_exhaust_from_hand(c, i);
        else
            i++;
    }
    while (c->hand_n > 0) { /* the top card: nothing to close up */
        combat_add_to_discard(c, &c->hand[c->hand_n - 1]);
        c->hand_n--;
        memset(&c->hand[c->hand_n], 0, sizeof(sf_card));
    }
    /* resetAttributes: "costs 0 this turn" ends everywhere */
    for (int i = 0; i < c->draw_n; i++)
        c->draw[i].flags &= (uint8_t)~CF_TURN_FLAGS;
    for (int i = 0; i < c->discard_n; i++)
        c->discard[i].flags &= (uint8_t)~CF_TURN_FLAGS;
    combat_drain(c);
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
    /* 1. monsters atEndOfTurn: Metallicize block; GainStrengthPower
     * (Shackled) gives its Strength back and goes */
    for (int m = 0; m < c->n_mon; m++) {
        sf_monster *mo = &c->mon[m];
        if (combat_alive(c, m) && mo->pw[PW_METALLICIZE] > 0) {
            int b = mo->block + mo->pw[PW_METALLICIZE];
            mo->block = (int16_t)(b > 999 ? 999 : b);
        }
        if (combat_alive(c, m) && mo->pw[PW_SHACKLED] != 0) {
            int n = mo->pw[PW_SHACKLED];
            mo->pw[PW_SHACKLED] = 0;
            combat_power_monster(c, m, PW_STR, n);
        }
    }
    /* 2. the player's atEndOfRound: Weak, Vulnerable, Frail, Intangible */
    tick(&c->pw[PW_WEAK], &c->just, JA_WEAK);
    tick(&c->pw[PW_VULN], &c->just, JA_VULN);
    tick(&c->pw[PW_FRAIL], &c->just, JA_FRAIL);
    if (c->pw[PW_INTANGIBLE] > 0)
        c->pw[PW_INTANGIBLE]--;
    /* NoBlockPower.atEndOfRound (the player's own: never just applied) */
    if (c->pw[PW_NO_BLOCK] > 0)
        c->pw[PW_NO_BLOCK]--;
    /* DuplicationPower.atEndOfRound: one stack is lost (potency 1: gone) */
    if (c->pw[PW_DUPLICATION] > 0)
        c->pw[PW_DUPLICATION]--;
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
        combat_drain(c); /* e.g. the Guardian's Mode Shift caused by thorns */
        combat_check_end(c);
        if (c->phase == PH_OVER)
            break;
    }
    for (int m = 0; m < c->n_mon; m++)
        c->mon[m].flags &= (uint8_t) ~(MF_ACTED | MF_NO_ACT);
}

/* Start of the player's turn 2+ (game-rules §2.2). The game has no turn
 * limit; ours is the fight's turn cap (engine.h "The turn cap"): once
 * max_turns turns have been played, the turn that would follow never
 * starts and the fight ends as a turn-limit loss. */
static void start_turn(sf_combat *c) {
    if (c->turn >= c->max_turns) {
        c->turn_limit = 1;
        combat_stop(c);
        return;
    }
    int played = c->cards_played; /* Pocketwatch counts the turn that ended */
    c->turn_actions = 0;
    c->cards_played = 0;
    c->attacks_played = 0;
    c->pw[PW_FLAME_BARRIER] = 0;
    c->turn++;
    /* block goes at once (Barricade keeps it; Calipers keeps all but 15) */
    if (c->pw[PW_BARRICADE] == 0)
        c->block =
            combat_has_relic(c, RELIC_CALIPERS) && c->block > 15 ? (int16_t)(c->block - 15) : 0;
    c->flags &= (uint8_t)~FL_TURN_ENDED;
    /* the recharge sets 3 energy (Ice Cream adds 3 to what is left) when
     * the draw is queued; what relics atTurnStart and powers atStartOfTurn
     * queued before it (energy, block, damage) lands after it, in order */
    int e = (combat_has_relic(c, RELIC_ICE_CREAM) ? c->energy : 0) + 3;
    c->energy = (uint8_t)(e > 255 ? 255 : e);
    relics_at_turn_start(c, 0);
    if (c->phase == PH_OVER)
        return;
    c->energy = (uint8_t)(c->energy + c->pw[PW_BERSERK]);
    int clay = combat_relic_slot(c, RELIC_SELF_FORMING_CLAY);
    if (clay >= 0 && c->relic_counter[clay] > 0) { /* NextTurnBlockPower.atStartOfTurn */
        int b = c->relic_counter[clay];
        c->relic_counter[clay] = 0;
        combat_gain_block(c, b);
    }
    if (c->pw[PW_PANACHE] > 0) /* PanachePower.atStartOfTurn */
        c->pw[PW_PANACHE_CNT] = PANACHE_CARDS;
    /* MagnetismPower.atStartOfTurn: its cards are drawn now and reach the
     * hand before the turn's draw. */
    for (int i = 0; i < c->pw[PW_MAGNETISM]; i++)
        combat_add_new(c, ZONE_HAND, combat_make_card(c, combat_random_colorless(c), 0));
    /* MayhemPower.atStartOfTurn queues one action per stack; each runs
     * before the draw, picks its target (cardRandomRng) and queues a
     * PlayTopCardAction behind everything the turn start queued. */
    int mayhem = c->pw[PW_MAYHEM] < SF_CARD_QUEUE ? c->pw[PW_MAYHEM] : SF_CARD_QUEUE;
    int mayhem_tgt[SF_CARD_QUEUE];
    for (int i = 0; i < mayhem; i++)
        mayhem_tgt[i] = combat_random_monster(c);
    combat_draw(c, 5);
    /* atTurnStartPostDraw relics (Pocketwatch), then atStartOfTurnPostDraw
     * powers, queued behind the draw: Demon Form's Strength; Brutality
     * draws its amount, then loses that much HP in one event. */
    relics_at_turn_start_post_draw(c, played, 0);
    if (c->pw[PW_DEMON_FORM] > 0)
        combat_power_player(c, PW_STR, c->pw[PW_DEMON_FORM], 0);
    if (c->pw[PW_BRUTALITY] > 0) {
        combat_draw(c, c->pw[PW_BRUTALITY]);
        combat_lose_hp(c, c->pw[PW_BRUTALITY]);
    }
    /* Mayhem's PlayTopCardActions take their cards now; the cards play
     * from the card queue once the actions queued behind (Evolve, Fire
     * Breathing) have run, as Havoc's do. */
    sf_pending *p = &c->pending;
    if (mayhem > 0)
        memset(p, 0, sizeof *p);
    for (int i = 0; i < mayhem && c->phase != PH_OVER; i++)
        if (!play_queue_top(c, mayhem_tgt[i]))
            break;
    combat_drain(c); /* Evolve, Fire Breathing */
    combat_check_end(c);
    if (p->queue_n > 0 && c->phase == PH_PLAYER)
        play_next_queued(c);
}

void play_end_turn(sf_combat *c) {
    /* 1. relics onPlayerEndTurn (Orichalcum), 2. Metallicize, Plated Armor */
    relics_on_player_end_turn(c);
    if (c->pw[PW_METALLICIZE] > 0)
        combat_gain_block(c, c->pw[PW_METALLICIZE]);
    if (c->pw[PW_PLATED] > 0)
        combat_gain_block(c, c->pw[PW_PLATED]);
    combat_drain(c); /* Juggernaut */
    combat_check_end(c);
    if (c->phase == PH_OVER)
        return;
    /* 3. every Burn in hand auto-plays: THORNS damage to the player
     * (card_end_turn_damage), then it goes to the discard pile (not counted
     * as a card played). Only the Burns in hand now: one drawn meanwhile
     * (Centennial Puzzle) stays. */
    int burns = 0;
    for (int i = 0; i < c->hand_n; i++)
        burns += c->hand[i].id == CARD_BURN;
    for (int i = 0; i < c->hand_n && c->phase != PH_OVER && burns > 0;) {
        if (c->hand[i].id == CARD_BURN) {
            burns--;
            sf_card k;
            combat_remove_hand(c, i, &k);
            combat_damage_player(c, card_end_turn_damage(&k), DT_THORNS, -1);
            combat_add_to_discard(c, &k);
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
        combat_thorns_all(c, c->pw[PW_COMBUST]);
        combat_check_end(c);
        if (c->phase == PH_OVER)
            return;
    }
    /* TheBombPower.atEndOfTurn, while a monster lives: the bombs due now
     * explode (DamageAllEnemiesAction THORNS), the others count down. */
    if (combat_alive_count(c) > 0) {
        int bomb = c->pw[PW_BOMB_1];
        c->pw[PW_BOMB_1] = c->pw[PW_BOMB_2];
        c->pw[PW_BOMB_2] = c->pw[PW_BOMB_3];
        c->pw[PW_BOMB_3] = 0;
        if (bomb > 0) {
            combat_thorns_all(c, bomb);
            combat_check_end(c);
            if (c->phase == PH_OVER)
                return;
        }
    }
    /* Ritual from Cultist Potion (RitualPower with playerControlled):
     * atEndOfTurn gains its amount of Strength, the turn it is drunk too. */
    if (c->pw[PW_RITUAL] > 0)
        combat_power_player(c, PW_STR, c->pw[PW_RITUAL], 0);
    /* Flex / Speed Potion: the loss is itself an ApplyPowerAction of negative
     * Strength (Dexterity), which Artifact can still block. */
    if (c->pw[PW_LOSE_STR]) {
        int n = c->pw[PW_LOSE_STR];
        c->pw[PW_LOSE_STR] = 0;
        combat_power_player(c, PW_STR, -n, 0);
    }
    if (c->pw[PW_LOSE_DEX]) {
        int n = c->pw[PW_LOSE_DEX];
        c->pw[PW_LOSE_DEX] = 0;
        combat_power_player(c, PW_DEX, -n, 0);
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
    c->block_enemy_turn = c->block;
    monster_phase(c);
    if (c->phase == PH_OVER)
        return;
    end_of_round(c);
    combat_compact(c);
    start_turn(c);
}

/* Turn 1 (game-rules §2.1 step 4): energy 3, draw 5 plus the cards put on
 * top beyond 5, relics atBattleStart, atTurnStart, atTurnStartPostDraw.
 * No block removal, no post-draw powers. */
void play_first_turn(sf_combat *c, int on_top) {
    c->turn = 1;
    c->energy = 3;
    /* Toolbox.atBattleStartPreDraw: ChooseOneColorless, queued ahead of the
     * opening draw (three distinct colorless cards, cardRandomRng) */
    if (combat_has_relic(c, RELIC_TOOLBOX)) {
        combat_discover(c, CH_TOOLBOX, DISCOVER_COLORLESS);
        c->pending.amount = (uint8_t)on_top;
        return;
    }
    first_turn_draw(c, on_top);
}

static void first_turn_draw(sf_combat *c, int on_top) {
    combat_draw(c, 5 + (on_top > 5 ? on_top - 5 : 0));
    relics_at_battle_start(c);
    if (combat_has_relic(c, RELIC_LANTERN))
        c->energy++;
    relics_at_turn_start(c, 1);
    combat_drain(c);
    combat_check_end(c);
    if (c->phase != PH_OVER)
        relics_at_turn_start_post_draw(c, 0, 1);
}
