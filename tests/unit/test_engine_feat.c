/*
 * test_engine_feat.c — the tokenizer (sf_engine_feat): token sets of known
 * positions, hand-computed playmath, honesty, capacity and query mapping.
 *
 * Positions are built white-box: a fight is started normally and then its
 * piles, powers and monsters are set through engine/internal.h, so each
 * expected number below can be computed by hand from the facts sheet §1
 * formulas (float, floored once; block absorbs before HP).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "sf_check.h"

/* ---- position helpers --------------------------------------------------- */

static sf_state fight(int encounter, uint64_t seed) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.encounter = encounter;
    spec.seed = seed;
    sf_state s;
    sf_err err = {0};
    ck_assert_msg(sf_engine_init(&s, &spec, &err) == SF_OK, "%s", err.msg);
    return s;
}

static void set_pile(sf_combat *c, sf_card *pile, uint8_t *n, int cap, const int *ids, int k) {
    memset(pile, 0, sizeof(sf_card) * (size_t)cap);
    for (int i = 0; i < k; i++)
        pile[i] = combat_make_card(c, ids[i] & 0xFF, ids[i] >> 8);
    *n = (uint8_t)k;
}

#define UP(id) ((id) | 0x100) /* upgraded card in an id list */

static void set_hand(sf_combat *c, const int *ids, int k) {
    set_pile(c, c->hand, &c->hand_n, SF_MAX_HAND, ids, k);
}
static void set_draw(sf_combat *c, const int *ids, int k) {
    set_pile(c, c->draw, &c->draw_n, SF_MAX_PILE, ids, k);
    c->draw_known = 0;
}
static void set_discard(sf_combat *c, const int *ids, int k) {
    set_pile(c, c->discard, &c->discard_n, SF_MAX_PILE, ids, k);
}
static void set_exhaust(sf_combat *c, const int *ids, int k) {
    set_pile(c, c->exhaust, &c->exhaust_n, SF_MAX_PILE, ids, k);
}

/* A Jaw Worm fight reduced to a clean slate: 80/80 HP, 3 energy, no
 * powers, the worm at `hp` HP announcing Chomp (11). */
static sf_state jaw_worm(int hp) {
    sf_state s = fight(ENC_JAW_WORM, 7);
    sf_combat *c = combat_of(&s);
    memset(c->pw, 0, sizeof c->pw);
    c->just = 0;
    c->block = 0;
    c->energy = 3;
    sf_monster *mo = &c->mon[0];
    memset(mo->pw, 0, sizeof mo->pw);
    mo->hp = (int16_t)hp;
    mo->max_hp = 44;
    mo->block = 0;
    mo->move = MV_CHOMP;
    set_hand(c, NULL, 0);
    set_draw(c, NULL, 0);
    set_discard(c, NULL, 0);
    set_exhaust(c, NULL, 0);
    return s;
}

static int feat_all(const sf_state *s, sf_feat *f, sf_action *acts, int *n) {
    *n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
    return sf_engine_feat(s, acts, *n, f);
}

/* The query row of the first action matching (kind, index, target). */
static const float *qrow(const sf_feat *f, const sf_action *acts, int n, int kind, int index,
                         int target) {
    for (int q = 0; q < n; q++)
        if (acts[q].kind == kind && acts[q].index == index && acts[q].target == target)
            return f->qcont[q];
    ck_abort_msg("action (%d,%d,%d) not enumerated", kind, index, target);
    return NULL;
}

static int count_type(const sf_feat *f, int type) {
    int n = 0;
    for (int t = 0; t < f->n_tokens; t++)
        n += f->type[t] == type;
    return n;
}

static int find_token(const sf_feat *f, int type, int cat0) {
    for (int t = 0; t < f->n_tokens; t++)
        if (f->type[t] == type && f->cat[t][0] == cat0)
            return t;
    return -1;
}

#define EPS                 1e-6f
#define ck_assert_feq(a, b) ck_assert_float_eq_tol((a), (b), EPS)

static sf_feat feat_buf; /* 14 KB: keep it off the stack */

/* ---- token sets ---------------------------------------------------------- */

START_TEST(token_set_of_a_known_position) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_STRIKE, CARD_STRIKE, CARD_BASH, CARD_DEFEND, CARD_STRIKE};
    int draw[] = {CARD_DEFEND, CARD_DEFEND, CARD_STRIKE, CARD_DEFEND, CARD_STRIKE};
    int discard[] = {UP(CARD_STRIKE)};
    set_hand(c, hand, 5);
    set_draw(c, draw, 5);
    set_discard(c, discard, 1);
    c->pw[PW_STR] = 2;
    c->mon[0].pw[PW_VULN] = 1;
    c->potions[0] = POTION_FIRE;

    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* CTX + player + monster + intent + 3 distinct hand cards (Strike x3,
     * Bash, Defend) + 2 draw groups (Defend x3, Strike x2) + 1 discard
     * (Strike+) + Strength + the worm's Vulnerable + Burning Blood + Fire
     * Potion = 14. */
    ck_assert_int_eq(f->n_tokens, 14);
    ck_assert_int_eq(count_type(f, SF_TOK_CTX), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_PLAYER), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_MONSTER), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_INTENT), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_CARD_HAND), 3);
    ck_assert_int_eq(count_type(f, SF_TOK_CARD_DRAW), 2);
    ck_assert_int_eq(count_type(f, SF_TOK_CARD_DISCARD), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_CARD_EXHAUST), 0);
    ck_assert_int_eq(count_type(f, SF_TOK_STATUS), 2);
    ck_assert_int_eq(count_type(f, SF_TOK_RELIC), 1);
    ck_assert_int_eq(count_type(f, SF_TOK_POTION), 1);

    /* Categorical ids. */
    ck_assert_int_eq(f->type[0], SF_TOK_CTX);
    ck_assert_int_eq(f->cat[0][0], SF_FEAT_ID_ENCOUNTER + ENC_JAW_WORM);
    int mon = find_token(f, SF_TOK_MONSTER, SF_FEAT_ID_MONSTER + MON_JAW_WORM);
    ck_assert_int_ge(mon, 0);
    ck_assert_int_eq(f->cat[mon][3], 1); /* owner code of slot 0 */
    int intent = find_token(f, SF_TOK_INTENT, SF_FEAT_ID_MOVE + MV_CHOMP);
    ck_assert_int_ge(intent, 0);
    ck_assert_int_eq(f->cat[intent][1], 1);
    ck_assert_int_eq(f->cat[intent][2], INT_ATTACK);
    /* Chomp 11 on a non-Vulnerable player: 11 per hit, 1 hit. */
    ck_assert_feq(f->cont[intent][0], 11.0f / 20.0f);
    ck_assert_feq(f->cont[intent][2], 11.0f / 50.0f);
    int strike = find_token(f, SF_TOK_CARD_HAND, SF_FEAT_ID_CARD + CARD_STRIKE);
    ck_assert_feq(f->cont[strike][0], 3.0f / 5.0f); /* three copies */
    ck_assert_int_eq(f->cat[strike][1], 0);         /* not upgraded */
    ck_assert_int_eq(f->cat[strike][2], 2 + 1);     /* cost bucket: 2 + cost */
    /* (6 + 2 Strength) with no target modifiers = 8 per hit. */
    ck_assert_feq(f->cont[strike][7], 8.0f / 20.0f);
    int up = find_token(f, SF_TOK_CARD_DISCARD, SF_FEAT_ID_CARD + CARD_STRIKE);
    ck_assert_int_eq(f->cat[up][1], 1);
    int vuln = find_token(f, SF_TOK_STATUS, SF_FEAT_ID_POWER + PW_VULN);
    ck_assert_int_eq(f->cat[vuln][1], 1); /* on monster slot 0 */
    int str = find_token(f, SF_TOK_STATUS, SF_FEAT_ID_POWER + PW_STR);
    ck_assert_int_eq(f->cat[str][1], SF_FEAT_OWNER_PLAYER);
    ck_assert_feq(f->cont[str][0], 0.2f);
    int potion = find_token(f, SF_TOK_POTION, SF_FEAT_ID_POTION + POTION_FIRE);
    ck_assert_int_eq(f->cat[potion][3], 0);
    /* Player: 80/80 HP, 3 energy. */
    ck_assert_feq(f->cont[1][0], 0.8f);
    ck_assert_feq(f->cont[1][2], 1.0f);
    ck_assert_feq(f->cont[1][4], 3.0f / 5.0f);
    /* Rows beyond n_tokens are zero (the struct is deterministic). */
    ck_assert_int_eq(f->type[f->n_tokens], SF_TOK_PAD);
    ck_assert_feq(f->cont[f->n_tokens][0], 0.0f);
}
END_TEST

START_TEST(known_top_cards_are_their_own_tokens) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    int draw[] = {CARD_DEFEND, CARD_DEFEND, CARD_STRIKE, CARD_BASH, CARD_DEFEND};
    set_draw(c, draw, 5);
    c->draw_known = 2; /* Defend on top, Bash under it (e.g. Warcry, Headbutt) */
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* Two known (positions 1 and 2) + unknown {Defend x2, Strike} = 4. */
    ck_assert_int_eq(count_type(f, SF_TOK_CARD_DRAW), 4);
    int seen_top = 0, seen_second = 0;
    for (int t = 0; t < f->n_tokens; t++) {
        if (f->type[t] != SF_TOK_CARD_DRAW)
            continue;
        if (f->cat[t][3] == 1) {
            ck_assert_int_eq(f->cat[t][0], SF_FEAT_ID_CARD + CARD_DEFEND);
            seen_top++;
        } else if (f->cat[t][3] == 2) {
            ck_assert_int_eq(f->cat[t][0], SF_FEAT_ID_CARD + CARD_BASH);
            seen_second++;
        } else if (f->cat[t][0] == SF_FEAT_ID_CARD + CARD_DEFEND) {
            ck_assert_feq(f->cont[t][0], 2.0f / 5.0f);
        }
    }
    ck_assert_int_eq(seen_top, 1);
    ck_assert_int_eq(seen_second, 1);
}
END_TEST

/* ---- playmath ------------------------------------------------------------ */

START_TEST(playmath_strike_and_bash_through_strength_and_vulnerable) {
    sf_state s = jaw_worm(20);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_STRIKE, CARD_BASH, CARD_DEFEND};
    set_hand(c, hand, 3);
    c->pw[PW_STR] = 2;
    c->mon[0].pw[PW_VULN] = 1;
    c->mon[0].block = 5;
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);

    /* Strike: (6 + 2) x 1.5 = 12; 5 blocked, 7 to HP (20 -> 13). */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 12.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 1.0f / 3.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 11.0f / 50.0f); /* Chomp 11, no block */
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 12.0f / 25.0f);  /* 5 block + 7 HP of 25 */

    /* Bash: (8 + 2) x 1.5 = 15; 5 blocked, 10 to HP. */
    q = qrow(f, acts, n, SF_ACT_PLAY, 1, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 15.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 2.0f / 3.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 15.0f / 25.0f);

    /* Defend: 5 block; Chomp's 11 leaves 6 uncovered. */
    q = qrow(f, acts, n, SF_ACT_PLAY, 2, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 5.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 0.0f);

    /* Weak player: Strike (6 + 2) x 0.75 x 1.5 = 9 exactly. */
    c->pw[PW_WEAK] = 1;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 9.0f / 50.0f);
}
END_TEST

START_TEST(playmath_lethal_and_kills_all) {
    sf_state s = jaw_worm(7);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_STRIKE, CARD_DEFEND};
    set_hand(c, hand, 2);
    c->pw[PW_STR] = 1;
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* 6 + 1 = 7 against 7 HP and no block: the worm dies, the fight is won
     * and its Chomp never lands. */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 7.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 1.0f);
    /* One block point more and it survives at 1 HP. */
    c->mon[0].block = 1;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 11.0f / 50.0f);
}
END_TEST

START_TEST(playmath_cleave_over_two_lice) {
    sf_state s = fight(ENC_2_LOUSE, 11);
    sf_combat *c = combat_of(&s);
    ck_assert_int_eq(c->n_mon, 2);
    memset(c->pw, 0, sizeof c->pw);
    c->energy = 3;
    c->block = 0;
    for (int m = 0; m < 2; m++) {
        memset(c->mon[m].pw, 0, sizeof c->mon[m].pw);
        c->mon[m].block = 0;
        c->mon[m].move = MV_LOUSE_BITE;
        c->mon[m].val[0] = 6; /* bite D = 6 */
        c->mon[m].max_hp = 15;
    }
    c->mon[0].hp = 5;
    c->mon[1].hp = 10;
    c->mon[1].pw[PW_CURL_UP] = 4;
    int hand[] = {CARD_CLEAVE};
    set_hand(c, hand, 1);
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* Cleave 8 to each: louse 0 (5 HP) dies, louse 1 (10 HP) survives at 2
     * (its Curl Up block lands after the card). Damage 8 + 8 = 16; half the
     * monsters die; only louse 1's bite (6) remains; progress
     * (5 + 8) / (5 + 10). */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 16.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.5f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 13.0f / 15.0f);
    /* End turn: both bites, 12, no block. */
    q = qrow(f, acts, n, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 12.0f / 50.0f);
}
END_TEST

START_TEST(playmath_double_tap_twin_strike_meets_curl_up) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    c->mon[0].pw[PW_CURL_UP] = 5;
    c->pw[PW_DOUBLE_TAP] = 1;
    int hand[] = {CARD_TWIN_STRIKE};
    set_hand(c, hand, 1);
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* Play 1: 5 + 5 to HP (30 -> 20); Curl Up's 5 block lands after it.
     * The Double Tap copy: 5 absorbed, 5 to HP (-> 15). Dealt 20; progress
     * 20 of 30. */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 20.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 20.0f / 30.0f);
}
END_TEST

START_TEST(playmath_hemokinesis_with_rupture) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    c->pw[PW_RUPTURE] = 1;
    int hand[] = {CARD_HEMOKINESIS};
    set_hand(c, hand, 1);
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* Lose 2 HP first; Rupture gives +1 Strength; 15 + 1 = 16 damage. */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 16.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 2.0f / 10.0f);
}
END_TEST

START_TEST(playmath_block_through_dexterity_frail_and_feel_no_pain) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_DEFEND, CARD_SECOND_WIND, CARD_DEFEND, CARD_STRIKE, CARD_WOUND, CARD_BASH};
    set_hand(c, hand, 6);
    c->pw[PW_DEX] = 2;
    c->pw[PW_FRAIL] = 1;
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* Defend: (5 + 2) x 0.75 = 5.25 -> 5. */
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 5.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    /* Second Wind exhausts the 3 other non-Attacks (Defend, Defend, Wound):
     * 3 x 5 = 15. With Feel No Pain 3: + 3 x 3 = 24. */
    q = qrow(f, acts, n, SF_ACT_PLAY, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 15.0f / 50.0f);
    c->pw[PW_FNP] = 3;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    q = qrow(f, acts, n, SF_ACT_PLAY, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 24.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
}
END_TEST

START_TEST(playmath_end_turn_and_potions) {
    sf_state s = jaw_worm(20);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_BURN};
    set_hand(c, hand, 1);
    c->pw[PW_METALLICIZE] = 3;
    c->potions[0] = POTION_FIRE;
    c->potions[1] = POTION_BLOCK;
    c->mon[0].pw[PW_VULN] = 2;
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    /* End turn: Metallicize 3 block, the Burn's 2 takes 2 of it, Chomp 11
     * meets the remaining 1: 10 uncovered, no HP lost to the Burn. */
    const float *q = qrow(f, acts, n, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 3.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 10.0f / 50.0f);
    /* Fire Potion: 20 THORNS damage, Vulnerable does not apply; 20 HP: lethal. */
    q = qrow(f, acts, n, SF_ACT_POTION, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 20.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 0.0f);
    /* Block Potion: 12 block, not modified by Dexterity. */
    q = qrow(f, acts, n, SF_ACT_POTION, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 12.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
}
END_TEST

/* ---- queries ------------------------------------------------------------- */

START_TEST(queries_point_at_the_acting_token_and_target) {
    sf_state s = fight(ENC_GREMLIN_GANG, 5);
    sf_combat *c = combat_of(&s);
    c->potions[2] = POTION_WEAK;
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    ck_assert_int_eq(f->n_queries, n);
    for (int q = 0; q < n; q++) {
        int what = f->query[q][0], target = f->query[q][1];
        ck_assert_int_lt(what, f->n_tokens);
        ck_assert_int_lt(target, f->n_tokens);
        switch (acts[q].kind) {
        case SF_ACT_PLAY:
            ck_assert_int_eq(f->type[what], SF_TOK_CARD_HAND);
            ck_assert_int_eq(f->cat[what][0], SF_FEAT_ID_CARD + c->hand[acts[q].index].id);
            break;
        case SF_ACT_POTION:
            ck_assert_int_eq(f->type[what], SF_TOK_POTION);
            ck_assert_int_eq(f->cat[what][3], acts[q].index);
            break;
        case SF_ACT_END_TURN: ck_assert_int_eq(f->type[what], SF_TOK_CTX); break;
        default: ck_abort_msg("unexpected action kind %d", acts[q].kind);
        }
        if (acts[q].target == SF_NO_TARGET) {
            ck_assert_int_eq(f->type[target], SF_TOK_PLAYER);
        } else {
            ck_assert_int_eq(f->type[target], SF_TOK_MONSTER);
            ck_assert_int_eq(f->cat[target][3], 1 + acts[q].target);
            ck_assert_int_eq(f->cat[target][0], SF_FEAT_ID_MONSTER + c->mon[acts[q].target].id);
        }
    }
}
END_TEST

START_TEST(choice_queries_name_the_option_card_in_its_pile) {
    /* Headbutt opens a choice over the discard pile (two distinct cards). */
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_HEADBUTT};
    int discard[] = {CARD_DEFEND, CARD_BASH, CARD_DEFEND};
    set_hand(c, hand, 1);
    set_discard(c, discard, 3);
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_PLAY, 0, 0, 0}, NULL), SF_OK);
    ck_assert_int_eq(c->phase, PH_CHOICE);
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    ck_assert_int_eq(feat_all(&s, f, acts, &n), SF_OK);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(f->cat[0][1], CH_HEADBUTT); /* CTX names the open choice */
    int ids[2] = {-1, -1};
    for (int q = 0; q < n; q++) {
        ck_assert_int_eq(acts[q].kind, SF_ACT_CHOOSE);
        int what = f->query[q][0];
        ck_assert_int_eq(f->type[what], SF_TOK_CARD_DISCARD);
        ck_assert_int_eq(f->type[f->query[q][1]], SF_TOK_PLAYER);
        ids[q] = f->cat[what][0] - SF_FEAT_ID_CARD;
        sf_action_info info;
        ck_assert_int_eq(sf_engine_action_info(&s, acts[q], &info), SF_OK);
        ck_assert_int_eq(ids[q], info.card_id);
    }
    ck_assert_int_ne(ids[0], ids[1]);
}
END_TEST

START_TEST(bad_query_lists_are_refused) {
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_STRIKE};
    set_hand(c, hand, 1);
    sf_feat *f = &feat_buf;
    sf_action acts[SF_FEAT_MAX_QUERIES + 1];
    memset(acts, 0, sizeof acts);
    ck_assert_int_eq(sf_engine_feat(&s, acts, -1, f), SF_EINVAL);
    ck_assert_int_eq(sf_engine_feat(&s, acts, SF_FEAT_MAX_QUERIES + 1, f), SF_EINVAL);
    /* A play of hand position 7 (the hand holds one card) names nothing. */
    sf_action bad = {SF_ACT_PLAY, 7, 0, 0};
    ck_assert_int_eq(sf_engine_feat(&s, &bad, 1, f), SF_EINVAL);
    ck_assert_int_eq(f->n_queries, 1);
    ck_assert_int_eq(f->type[f->query[0][0]], SF_TOK_CTX);
    ck_assert_int_eq(f->type[f->query[0][1]], SF_TOK_PLAYER);
    ck_assert_feq(f->qcont[0][SF_FEAT_Q_DAMAGE], 0.0f);
    /* No queries at all is fine. */
    ck_assert_int_eq(sf_engine_feat(&s, NULL, 0, f), SF_OK);
    ck_assert_int_eq(f->n_queries, 0);
    ck_assert_int_gt(f->n_tokens, 0);
}
END_TEST

/* ---- honesty ------------------------------------------------------------- */

/* Play `steps` uniform random actions from a seed (xorshift picks). */
static void random_steps(sf_state *s, uint64_t seed, int steps) {
    uint64_t r = seed | 1;
    for (int i = 0; i < steps && !sf_engine_is_terminal(s); i++) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        ck_assert_int_eq(sf_engine_apply(s, acts[r % (uint64_t)n], NULL), SF_OK);
    }
}

static void reverse_unknown_draw(sf_state *s) {
    sf_combat *c = combat_of(s);
    int unknown = c->draw_n - c->draw_known;
    for (int i = 0, j = unknown - 1; i < j; i++, j--) {
        sf_card t = c->draw[i];
        c->draw[i] = c->draw[j];
        c->draw[j] = t;
    }
}

static sf_feat feat_other;

START_TEST(hidden_draw_order_and_rolls_do_not_change_tokens) {
    int compared = 0;
    for (int enc = 0; enc < ENC_COUNT; enc++) {
        for (int steps = 0; steps < 12; steps += 3) {
            sf_state a = fight(enc, 1000 + (uint64_t)enc);
            random_steps(&a, 77 + (uint64_t)steps, steps);
            if (sf_engine_is_terminal(&a))
                continue;
            sf_combat *ca = combat_of(&a);
            if (ca->draw_n - ca->draw_known < 2)
                continue;
            sf_state b = a;
            reverse_unknown_draw(&b);
            for (int i = 0; i < SF_NUM_STREAMS; i++)
                sf_engine_reseed(&b, i, 0xDEADBEEF + (uint64_t)i);
            ck_assert(memcmp(&a, &b, sizeof a) != 0);
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&a, acts, SF_MAX_ACTIONS);
            sf_engine_feat(&a, acts, n, &feat_buf);
            sf_engine_feat(&b, acts, n, &feat_other);
            ck_assert_msg(memcmp(&feat_buf, &feat_other, sizeof feat_buf) == 0,
                          "encounter %d after %d steps: tokens differ", enc, steps);
            /* The belief root of the truth tokenizes like the truth. */
            sf_state root;
            sf_engine_belief_root(&a, 99, &root);
            sf_engine_feat(&root, acts, n, &feat_other);
            ck_assert_msg(memcmp(&feat_buf, &feat_other, sizeof feat_buf) == 0,
                          "encounter %d: belief root tokens differ", enc);
            compared++;
        }
    }
    ck_assert_int_gt(compared, 30);
}
END_TEST

START_TEST(known_top_card_is_visible_in_tokens) {
    /* The converse: a different known top card must change the tokens. */
    sf_state a = jaw_worm(30);
    sf_combat *c = combat_of(&a);
    int draw[] = {CARD_DEFEND, CARD_STRIKE, CARD_BASH};
    set_draw(c, draw, 3);
    c->draw_known = 1; /* Bash known on top */
    sf_state b = a;
    combat_of(&b)->draw[2] = combat_make_card(c, CARD_DEFEND, 0);
    combat_of(&b)->draw[0] = combat_make_card(c, CARD_BASH, 0);
    sf_engine_feat(&a, NULL, 0, &feat_buf);
    sf_engine_feat(&b, NULL, 0, &feat_other);
    ck_assert_int_eq(feat_buf.n_tokens, feat_other.n_tokens);
    ck_assert(memcmp(&feat_buf, &feat_other, sizeof feat_buf) != 0);
}
END_TEST

/* ---- capacity ------------------------------------------------------------ */

START_TEST(overflow_reports_efull_and_stays_in_bounds) {
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    /* 64 distinct cards in each of draw, discard and exhaust: 192 card
     * tokens alone, beyond SF_FEAT_MAX_TOKENS. */
    int ids[SF_MAX_PILE];
    int k = 0;
    for (int id = 1; id < CARD_COUNT && k < SF_MAX_PILE; id++) {
        if (sf_cards[id].type == CT_STATUS)
            continue;
        ids[k++] = id;
        if (k < SF_MAX_PILE)
            ids[k++] = UP(id);
    }
    ck_assert_int_eq(k, SF_MAX_PILE);
    set_draw(c, ids, k);
    set_discard(c, ids, k);
    set_exhaust(c, ids, k);
    int hand[] = {CARD_STRIKE, CARD_DEFEND, CARD_BASH};
    set_hand(c, hand, 3);

    /* Guard bytes after the struct catch any write past it. */
    size_t guard = 4096;
    uint8_t *mem = malloc(sizeof(sf_feat) + guard);
    ck_assert_ptr_nonnull(mem);
    memset(mem, 0xA5, sizeof(sf_feat) + guard);
    sf_feat *f = (sf_feat *)(void *)mem;
    sf_action acts[SF_MAX_ACTIONS];
    int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
    ck_assert_int_eq(sf_engine_feat(&s, acts, n, f), SF_EFULL);
    ck_assert_int_eq(f->n_tokens, SF_FEAT_MAX_TOKENS);
    for (size_t i = 0; i < guard; i++)
        ck_assert_uint_eq(mem[sizeof(sf_feat) + i], 0xA5);
    /* The tokens queries name come first, so every query is still valid. */
    for (int q = 0; q < n; q++) {
        ck_assert_int_lt(f->query[q][0], SF_FEAT_MAX_TOKENS);
        int what = f->query[q][0];
        if (acts[q].kind == SF_ACT_PLAY)
            ck_assert_int_eq(f->type[what], SF_TOK_CARD_HAND);
    }
    free(mem);
}
END_TEST

/* ---- every position of random play is well formed ------------------------ */

START_TEST(random_play_tokens_are_in_vocabulary_and_range) {
    static const int vocab[SF_FEAT_NCAT] = {SF_FEAT_VOCAB0, SF_FEAT_VOCAB1, SF_FEAT_VOCAB2,
                                            SF_FEAT_VOCAB3};
    sf_feat *f = &feat_buf;
    long positions = 0;
    for (int fightno = 0; fightno < 60; fightno++) {
        sf_state s = fight(fightno % ENC_COUNT, 500 + (uint64_t)fightno);
        uint64_t r = 0x9E3779B97F4A7C15ull * (uint64_t)(fightno + 1);
        while (!sf_engine_is_terminal(&s)) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            int rc = sf_engine_feat(&s, acts, n, f);
            ck_assert(rc == SF_OK || rc == SF_EFULL);
            ck_assert_int_ge(f->n_tokens, 3);
            for (int t = 0; t < f->n_tokens; t++) {
                ck_assert(f->type[t] > SF_TOK_PAD && f->type[t] < SF_FEAT_NTYPES);
                for (int j = 0; j < SF_FEAT_NCAT; j++)
                    ck_assert_int_lt(f->cat[t][j], vocab[j]);
                for (int j = 0; j < SF_FEAT_NCONT; j++)
                    ck_assert(isfinite(f->cont[t][j]) && fabsf(f->cont[t][j]) < 50.0f);
            }
            for (int q = 0; q < n; q++) {
                ck_assert_int_lt(f->query[q][0], f->n_tokens);
                ck_assert_int_lt(f->query[q][1], f->n_tokens);
                for (int j = 0; j < SF_FEAT_NQCONT; j++)
                    ck_assert(isfinite(f->qcont[q][j]) && fabsf(f->qcont[q][j]) < 50.0f);
            }
            positions++;
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            ck_assert_int_eq(sf_engine_apply(&s, acts[r % (uint64_t)n], NULL), SF_OK);
        }
    }
    ck_assert_int_gt(positions, 1000);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine-feat");
    TCase *tc = tcase_create("feat");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, token_set_of_a_known_position);
    tcase_add_test(tc, known_top_cards_are_their_own_tokens);
    tcase_add_test(tc, playmath_strike_and_bash_through_strength_and_vulnerable);
    tcase_add_test(tc, playmath_lethal_and_kills_all);
    tcase_add_test(tc, playmath_cleave_over_two_lice);
    tcase_add_test(tc, playmath_double_tap_twin_strike_meets_curl_up);
    tcase_add_test(tc, playmath_hemokinesis_with_rupture);
    tcase_add_test(tc, playmath_block_through_dexterity_frail_and_feel_no_pain);
    tcase_add_test(tc, playmath_end_turn_and_potions);
    tcase_add_test(tc, queries_point_at_the_acting_token_and_target);
    tcase_add_test(tc, choice_queries_name_the_option_card_in_its_pile);
    tcase_add_test(tc, bad_query_lists_are_refused);
    tcase_add_test(tc, hidden_draw_order_and_rolls_do_not_change_tokens);
    tcase_add_test(tc, known_top_card_is_visible_in_tokens);
    tcase_add_test(tc, overflow_reports_efull_and_stays_in_bounds);
    tcase_add_test(tc, random_play_tokens_are_in_vocabulary_and_range);
    suite_add_tcase(s, tc);
    return sf_check_run(s, "engine-feat");
}
