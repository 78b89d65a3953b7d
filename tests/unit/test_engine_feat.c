/*
 * test_engine_feat.c — the tokenizer (sf_engine_feat): token sets of known
 * positions, hand-computed playmath, playmath against playing every card
 * over a random soak, honesty, capacity and query mapping.
 *
 * Positions are built white-box: a fight is started normally and then its
 * piles, powers and monsters are set through engine/internal.h, so each
 * expected number below can be computed by hand from game-rules §1
 * formulas (float, floored once; block absorbs before HP).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine_fixture.h"
#include "sf_check.h"

/* ---- position helpers --------------------------------------------------- */

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
    sf_state s = fx_fight(ENC_JAW_WORM, 7);
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

/* The features of s (in feat_buf) over its n legal actions acts[], which
 * must succeed. */
static sf_feat *feats(const sf_state *s, sf_action *acts, int *n) {
    ck_assert_int_eq(feat_all(s, &feat_buf, acts, n), SF_OK);
    return &feat_buf;
}

/* A state's features (f, in feat_buf) over its legal actions acts[0..n). */
typedef struct featq {
    sf_feat *f;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
} featq;

static featq feats_of(const sf_state *s) {
    featq x;
    x.f = feats(s, x.acts, &x.n);
    return x;
}

/* The query row of x's first action matching (kind, index, target). */
static const float *q_of(const featq *x, int kind, int index, int target) {
    return qrow(x->f, x->acts, x->n, kind, index, target);
}

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

    featq x = feats_of(&s);
    /* CTX + player + monster + intent + 3 distinct hand cards (Strike x3,
     * Bash, Defend) + 2 draw groups (Defend x3, Strike x2) + 1 discard
     * (Strike+) + Strength + the worm's Vulnerable + Burning Blood + Fire
     * Potion = 14. */
    ck_assert_int_eq(x.f->n_tokens, 14);
    ck_assert_int_eq(count_type(x.f, SF_TOK_CTX), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_PLAYER), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_MONSTER), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_INTENT), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_CARD_HAND), 3);
    ck_assert_int_eq(count_type(x.f, SF_TOK_CARD_DRAW), 2);
    ck_assert_int_eq(count_type(x.f, SF_TOK_CARD_DISCARD), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_CARD_EXHAUST), 0);
    ck_assert_int_eq(count_type(x.f, SF_TOK_STATUS), 2);
    ck_assert_int_eq(count_type(x.f, SF_TOK_RELIC), 1);
    ck_assert_int_eq(count_type(x.f, SF_TOK_POTION), 1);

    /* Categorical ids. */
    ck_assert_int_eq(x.f->type[0], SF_TOK_CTX);
    ck_assert_int_eq(x.f->cat[0][0], SF_FEAT_ID_ENCOUNTER + ENC_JAW_WORM);
    int mon = find_token(x.f, SF_TOK_MONSTER, SF_FEAT_ID_MONSTER + MON_JAW_WORM);
    ck_assert_int_ge(mon, 0);
    ck_assert_int_eq(x.f->cat[mon][3], 1); /* owner code of slot 0 */
    int intent = find_token(x.f, SF_TOK_INTENT, SF_FEAT_ID_MOVE + MV_CHOMP);
    ck_assert_int_ge(intent, 0);
    ck_assert_int_eq(x.f->cat[intent][1], 1);
    ck_assert_int_eq(x.f->cat[intent][2], INT_ATTACK);
    /* Chomp 11 on a non-Vulnerable player: 11 per hit, 1 hit. */
    ck_assert_feq(x.f->cont[intent][0], 11.0f / 20.0f);
    ck_assert_feq(x.f->cont[intent][2], 11.0f / 50.0f);
    int strike = find_token(x.f, SF_TOK_CARD_HAND, SF_FEAT_ID_CARD + CARD_STRIKE);
    ck_assert_feq(x.f->cont[strike][0], 3.0f / 5.0f); /* three copies */
    ck_assert_int_eq(x.f->cat[strike][1], 0);         /* not upgraded */
    ck_assert_int_eq(x.f->cat[strike][2], 2 + 1);     /* cost bucket: 2 + cost */
    /* (6 + 2 Strength) with no target modifiers = 8 per hit. */
    ck_assert_feq(x.f->cont[strike][7], 8.0f / 20.0f);
    int up = find_token(x.f, SF_TOK_CARD_DISCARD, SF_FEAT_ID_CARD + CARD_STRIKE);
    ck_assert_int_eq(x.f->cat[up][1], 1);
    int vuln = find_token(x.f, SF_TOK_STATUS, SF_FEAT_ID_POWER + PW_VULN);
    ck_assert_int_eq(x.f->cat[vuln][1], 1); /* on monster slot 0 */
    int str = find_token(x.f, SF_TOK_STATUS, SF_FEAT_ID_POWER + PW_STR);
    ck_assert_int_eq(x.f->cat[str][1], SF_FEAT_OWNER_PLAYER);
    ck_assert_feq(x.f->cont[str][0], 0.2f);
    int potion = find_token(x.f, SF_TOK_POTION, SF_FEAT_ID_POTION + POTION_FIRE);
    ck_assert_int_eq(x.f->cat[potion][3], 0);
    /* Player: 80/80 HP, 3 energy. */
    ck_assert_feq(x.f->cont[1][0], 0.8f);
    ck_assert_feq(x.f->cont[1][2], 1.0f);
    ck_assert_feq(x.f->cont[1][4], 3.0f / 5.0f);
    /* Rows beyond n_tokens are zero (the struct is deterministic). */
    ck_assert_int_eq(x.f->type[x.f->n_tokens], SF_TOK_PAD);
    ck_assert_feq(x.f->cont[x.f->n_tokens][0], 0.0f);
}
END_TEST

START_TEST(known_top_cards_are_their_own_tokens) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    set_draw(c, (const int[]){CARD_DEFEND, CARD_DEFEND, CARD_STRIKE, CARD_BASH, CARD_DEFEND}, 5);
    c->draw_known = 2; /* Defend on top, Bash under it (e.g. Warcry, Headbutt) */
    featq x = feats_of(&s);
    /* Two known (positions 1 and 2) + unknown {Defend x2, Strike} = 4. */
    ck_assert_int_eq(count_type(x.f, SF_TOK_CARD_DRAW), 4);
    int seen_top = 0, seen_second = 0;
    for (int t = 0; t < x.f->n_tokens; t++) {
        if (x.f->type[t] != SF_TOK_CARD_DRAW)
            continue;
        if (x.f->cat[t][3] == 1) {
            ck_assert_int_eq(x.f->cat[t][0], SF_FEAT_ID_CARD + CARD_DEFEND);
            seen_top++;
        } else if (x.f->cat[t][3] == 2) {
            ck_assert_int_eq(x.f->cat[t][0], SF_FEAT_ID_CARD + CARD_BASH);
            seen_second++;
        } else if (x.f->cat[t][0] == SF_FEAT_ID_CARD + CARD_DEFEND) {
            ck_assert_feq(x.f->cont[t][0], 2.0f / 5.0f);
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
    set_hand(c, (const int[]){CARD_STRIKE, CARD_BASH, CARD_DEFEND}, 3);
    c->pw[PW_STR] = 2;
    c->mon[0].pw[PW_VULN] = 1;
    c->mon[0].block = 5;
    featq x = feats_of(&s);

    /* Strike: (6 + 2) x 1.5 = 12; 5 blocked, 7 to HP (20 -> 13). */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 12.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 1.0f / 3.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 11.0f / 50.0f); /* Chomp 11, no block */
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 12.0f / 25.0f);  /* 5 block + 7 HP of 25 */

    /* Bash: (8 + 2) x 1.5 = 15; 5 blocked, 10 to HP. */
    q = q_of(&x, SF_ACT_PLAY, 1, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 15.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 2.0f / 3.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 15.0f / 25.0f);

    /* Defend: 5 block; Chomp's 11 leaves 6 uncovered. */
    q = q_of(&x, SF_ACT_PLAY, 2, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 5.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 0.0f);

    /* Weak player: Strike (6 + 2) x 0.75 x 1.5 = 9 exactly. */
    c->pw[PW_WEAK] = 1;
    x = feats_of(&s);
    q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 9.0f / 50.0f);
}
END_TEST

START_TEST(playmath_lethal_and_kills_all) {
    sf_state s = jaw_worm(7);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_STRIKE, CARD_DEFEND}, 2);
    c->pw[PW_STR] = 1;
    featq x = feats_of(&s);
    /* 6 + 1 = 7 against 7 HP and no block: the worm dies, the fight is won
     * and its Chomp never lands. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 7.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 1.0f);
    /* One block point more and it survives at 1 HP. */
    c->mon[0].block = 1;
    x = feats_of(&s);
    q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 11.0f / 50.0f);
}
END_TEST

START_TEST(playmath_cleave_over_two_lice) {
    sf_state s = fx_fight(ENC_2_LOUSE, 11);
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
    set_hand(c, (const int[]){CARD_CLEAVE}, 1);
    featq x = feats_of(&s);
    /* Cleave 8 to each: louse 0 (5 HP) dies, louse 1 (10 HP) survives at 2
     * (its Curl Up block lands after the card). Damage 8 + 8 = 16; half the
     * monsters die; only louse 1's bite (6) remains; progress
     * (5 + 8) / (5 + 10). */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 16.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.5f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 13.0f / 15.0f);
    /* End turn: both bites, 12, no block. */
    q = q_of(&x, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 12.0f / 50.0f);
}
END_TEST

START_TEST(playmath_double_tap_twin_strike_meets_curl_up) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    c->mon[0].pw[PW_CURL_UP] = 5;
    c->pw[PW_DOUBLE_TAP] = 1;
    set_hand(c, (const int[]){CARD_TWIN_STRIKE}, 1);
    featq x = feats_of(&s);
    /* Play 1: 5 + 5 to HP (30 -> 20); Curl Up's 5 block lands after it.
     * The Double Tap copy: 5 absorbed, 5 to HP (-> 15). Dealt 20; progress
     * 20 of 30. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 20.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 20.0f / 30.0f);
}
END_TEST

START_TEST(playmath_hemokinesis_damage_is_fixed_before_its_hp_loss) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    c->pw[PW_RUPTURE] = 1;
    set_hand(c, (const int[]){CARD_HEMOKINESIS}, 1);
    featq x = feats_of(&s);
    /* The damage (15) is computed as the card is played; the 2 HP lost
     * first raise Strength through Rupture only from the next card on. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 15.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 2.0f / 10.0f);
    ck_assert_int_eq(sf_engine_apply(&s, x.acts[0], NULL), SF_OK);
    ck_assert_int_eq(c->mon[0].hp, 30 - 15);
    ck_assert_int_eq(c->hp, 78);
    ck_assert_int_eq(c->pw[PW_STR], 1);
}
END_TEST

START_TEST(playmath_block_through_dexterity_frail_and_feel_no_pain) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    set_hand(c,
             (const int[]){CARD_DEFEND, CARD_SECOND_WIND, CARD_DEFEND, CARD_STRIKE, CARD_WOUND,
                           CARD_BASH},
             6);
    c->pw[PW_DEX] = 2;
    c->pw[PW_FRAIL] = 1;
    featq x = feats_of(&s);
    /* Defend: (5 + 2) x 0.75 = 5.25 -> 5. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 5.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 6.0f / 50.0f);
    /* Second Wind exhausts the 3 other non-Attacks (Defend, Defend, Wound):
     * 3 x 5 = 15. With Feel No Pain 3: + 3 x 3 = 24. */
    q = q_of(&x, SF_ACT_PLAY, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 15.0f / 50.0f);
    c->pw[PW_FNP] = 3;
    x = feats_of(&s);
    q = q_of(&x, SF_ACT_PLAY, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 24.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
}
END_TEST

START_TEST(playmath_end_turn_and_potions) {
    sf_state s = jaw_worm(20);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_BURN}, 1);
    c->pw[PW_METALLICIZE] = 3;
    c->potions[0] = POTION_FIRE;
    c->potions[1] = POTION_BLOCK;
    c->mon[0].pw[PW_VULN] = 2;
    featq x = feats_of(&s);
    /* End turn: Metallicize 3 block, the Burn's 2 takes 2 of it, Chomp 11
     * meets the remaining 1: 10 uncovered, no HP lost to the Burn. */
    const float *q = q_of(&x, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 3.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 10.0f / 50.0f);
    /* Fire Potion: 20 THORNS damage, Vulnerable does not apply; 20 HP: lethal. */
    q = q_of(&x, SF_ACT_POTION, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 20.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_COST], 0.0f);
    /* Block Potion: 12 block, not modified by Dexterity. */
    q = q_of(&x, SF_ACT_POTION, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 12.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 0.0f);
}
END_TEST

START_TEST(playmath_perfected_strike_counts_strikes_in_every_pile) {
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_PERFECTED_STRIKE, CARD_STRIKE};
    int draw[] = {CARD_STRIKE, CARD_TWIN_STRIKE, CARD_DEFEND};
    int discard[] = {CARD_POMMEL_STRIKE};
    int exhaust[] = {CARD_PERFECTED_STRIKE};
    set_hand(c, hand, 2);
    set_draw(c, draw, 3);
    set_discard(c, discard, 1);
    set_exhaust(c, exhaust, 1);
    featq x = feats_of(&s);
    /* Strike-tagged cards in hand, draw and discard: Perfected Strike,
     * Strike, Strike, Twin Strike, Pommel Strike = 5; 6 + 2 x 5 = 16. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 16.0f / 50.0f);
    int t = find_token(x.f, SF_TOK_CARD_HAND, SF_FEAT_ID_CARD + CARD_PERFECTED_STRIKE);
    ck_assert_feq(x.f->cont[t][7], 16.0f / 20.0f);
    /* The exhausted copy would count itself once back in hand: 6 + 2 x 6. */
    t = find_token(x.f, SF_TOK_CARD_EXHAUST, SF_FEAT_ID_CARD + CARD_PERFECTED_STRIKE);
    ck_assert_feq(x.f->cont[t][7], 18.0f / 20.0f);
    /* The engine agrees: the worm loses 16. */
    ck_assert_int_eq(sf_engine_apply(&s, x.acts[0], NULL), SF_OK);
    ck_assert_int_eq(c->mon[0].hp, 40 - 16);
}
END_TEST

START_TEST(relic_tokens_carry_each_relics_counter_and_next_trigger) {
    sf_state s = jaw_worm(30);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_STRIKE, CARD_DEFEND}, 2);
    static const struct {
        int relic, counter;
        float col0, col1, col2;
    } want[] = {
        {RELIC_NUNCHAKU, 9, 0.9f, 0.9f, 1},       /* the next Attack gives energy */
        {RELIC_INK_BOTTLE, 4, 0.4f, 0.4f, 0},     /* 6 cards to go */
        {RELIC_SUNDIAL, 2, 2.0f / 3.0f, 0.2f, 1}, /* the next shuffle gives energy */
        {RELIC_INCENSE_BURNER, 3, 0.5f, 0.3f, 0},
        {RELIC_GIRYA, 2, 2.0f / 3.0f, 0.2f, 0},  /* 2 lifts */
        {RELIC_LIZARD_TAIL, 0, 0, 0, 1},         /* a revive left */
        {RELIC_FOSSILIZED_HELIX, 1, 0, 0.1f, 1}, /* 1 Buffer */
        {RELIC_HORN_CLEAT, 0, 0.5f, 0, 1},       /* turn 1: 14 block next turn */
        {RELIC_CAPTAINS_WHEEL, 0, 1.0f / 3.0f, 0, 0},
        {RELIC_STONE_CALENDAR, 0, 1.0f / 7.0f, 0, 0},
        {RELIC_POCKETWATCH, 0, 0.5f, 0, 1}, /* 2 cards played so far */
        {RELIC_BOOT, 0, 0, 0, 0},
    };
    c->relic_n = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        c->relics[c->relic_n] = (uint8_t)want[i].relic;
        c->relic_counter[c->relic_n++] = (int16_t)want[i].counter;
    }
    c->turn = 1;
    c->cards_played = 2;
    featq x = feats_of(&s);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int t = find_token(x.f, SF_TOK_RELIC, SF_FEAT_ID_RELIC + want[i].relic);
        ck_assert_int_ge(t, 0);
        ck_assert_int_eq(x.f->cat[t][3], (int)i); /* position in the relic list */
        ck_assert_msg(fabsf(x.f->cont[t][0] - want[i].col0) < 1e-6f &&
                          fabsf(x.f->cont[t][1] - want[i].col1) < 1e-6f &&
                          fabsf(x.f->cont[t][2] - want[i].col2) < 1e-6f,
                      "%s: %g %g %g", sf_relic_name(want[i].relic), x.f->cont[t][0],
                      x.f->cont[t][1], x.f->cont[t][2]);
    }
    /* turn 7: Stone Calendar fires at this turn's end; Horn Cleat is spent */
    c->turn = 7;
    x = feats_of(&s);
    int t = find_token(x.f, SF_TOK_RELIC, SF_FEAT_ID_RELIC + RELIC_STONE_CALENDAR);
    ck_assert_float_eq(x.f->cont[t][0], 1.0f);
    ck_assert_float_eq(x.f->cont[t][2], 1.0f);
    t = find_token(x.f, SF_TOK_RELIC, SF_FEAT_ID_RELIC + RELIC_HORN_CLEAT);
    ck_assert_float_eq(x.f->cont[t][2], 0.0f);
}
END_TEST

START_TEST(playmath_double_tap_copy_plays_where_the_first_play_left) {
    sf_state s = jaw_worm(60);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_PERFECTED_STRIKE, CARD_STRIKE}, 2);
    c->pw[PW_DOUBLE_TAP] = 1;
    c->relics[c->relic_n++] = RELIC_SHURIKEN;
    c->attacks_played = 2;
    featq x = feats_of(&s);
    /* Perfected Strike counts itself and the Strike: 6 + 2 x 2 = 10. It is
     * the third Attack: Shuriken's Strength comes before the copy, which
     * still counts two Strikes (the original is in the discard pile):
     * 10 + 1. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 21.0f / 50.0f);
    ck_assert_int_eq(sf_engine_apply(&s, x.acts[0], NULL), SF_OK);
    ck_assert_int_eq(c->mon[0].hp, 60 - 21);
}
END_TEST

static void add_relic(sf_combat *c, int relic, int counter) {
    c->relic_counter[c->relic_n] = (int16_t)counter;
    c->relics[c->relic_n++] = (uint8_t)relic;
}

START_TEST(playmath_follows_boot_charons_ashes_and_letter_opener) {
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_STRIKE, CARD_SLIMED, CARD_DEFEND}, 3);
    c->mon[0].block = 4;
    add_relic(c, RELIC_BOOT, 0);
    add_relic(c, RELIC_CHARONS_ASHES, 0);
    add_relic(c, RELIC_LETTER_OPENER, 2);
    featq x = feats_of(&s);
    /* Strike: 6 against 4 block, the 2 past it become 5 (Boot). */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 9.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 9.0f / 44.0f);
    /* Slimed (a Status: no Letter Opener) exhausts: Charon's Ashes' 3
     * THORNS (no Boot) into the block. */
    q = q_of(&x, SF_ACT_PLAY, 1, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 3.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_PROGRESS], 3.0f / 44.0f);
    /* Defend, the third Skill: Letter Opener's 5, 4 of them into the block. */
    q = q_of(&x, SF_ACT_PLAY, 2, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 5.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_LETHAL], 0.0f);
    /* The engine agrees. */
    sf_state r = s;
    FX_PLAY(&r, 0, 0);
    ck_assert_int_eq(combat_of(&r)->mon[0].hp, 35);
    r = s;
    FX_PLAY(&r, 1, SF_NO_TARGET);
    ck_assert_int_eq(combat_of(&r)->mon[0].block, 1);
    r = s;
    FX_PLAY(&r, 2, SF_NO_TARGET);
    ck_assert_int_eq(combat_of(&r)->mon[0].hp, 39);
}
END_TEST

START_TEST(playmath_self_hp_through_heals_and_hp_relics) {
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    /* Bird-Faced Urn heals 2 on a Power, 3 with Magic Flower: SELF_HP -3. */
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_INFLAME, CARD_HEMOKINESIS}, 2);
    c->hp = 50;
    add_relic(c, RELIC_BIRD_FACED_URN, 0);
    add_relic(c, RELIC_MAGIC_FLOWER, 0);
    add_relic(c, RELIC_TUNGSTEN_ROD, 0);
    feats(&s, acts, &n);
    ck_assert_feq(qrow(f, acts, n, SF_ACT_PLAY, 0, SF_NO_TARGET)[SF_FEAT_Q_SELF_HP], -3.0f / 10.0f);
    /* Hemokinesis' 2 HP, 1 through Tungsten Rod. */
    ck_assert_feq(qrow(f, acts, n, SF_ACT_PLAY, 1, 0)[SF_FEAT_Q_SELF_HP], 1.0f / 10.0f);
    sf_state r = s;
    FX_PLAY(&r, 0, SF_NO_TARGET);
    ck_assert_int_eq(combat_of(&r)->hp, 53);

    /* Lizard Tail: Hemokinesis at 2 HP brings the player to 0, the tail to
     * half of 80 (x 1.5, Magic Flower): 2 - 60 = -58. */
    s = jaw_worm(40);
    c = combat_of(&s);
    int hemo[] = {CARD_HEMOKINESIS};
    set_hand(c, hemo, 1);
    c->hp = 2;
    add_relic(c, RELIC_LIZARD_TAIL, 0);
    add_relic(c, RELIC_MAGIC_FLOWER, 0);
    feats(&s, acts, &n);
    const float *q = qrow(f, acts, n, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], -58.0f / 10.0f);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 15.0f / 50.0f);
    r = s;
    FX_PLAY(&r, 0, 0);
    ck_assert_int_eq(combat_of(&r)->hp, 60);
}
END_TEST

START_TEST(playmath_double_tap_copy_after_ink_bottle_and_dead_branch) {
    sf_state s = jaw_worm(80);
    sf_combat *c = combat_of(&s);
    c->mon[0].max_hp = 80;
    int hand[] = {CARD_FIEND_FIRE, CARD_DEFEND, CARD_DEFEND};
    int draw[] = {CARD_STRIKE, CARD_STRIKE};
    set_hand(c, hand, 3);
    set_draw(c, draw, 2);
    c->pw[PW_DOUBLE_TAP] = 1;
    add_relic(c, RELIC_INK_BOTTLE, 9);
    add_relic(c, RELIC_DEAD_BRANCH, 0);
    featq x = feats_of(&s);
    /* Fiend Fire exhausts the 2 Defends and hits twice (7 each); Ink Bottle
     * draws 1; it exhausts itself; Dead Branch adds 3 random cards: the
     * copy finds 4 cards in hand: 2 x 7 + 4 x 7. */
    const float *q = q_of(&x, SF_ACT_PLAY, 0, 0);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 42.0f / 50.0f);
    FX_PLAY(&s, 0, 0);
    ck_assert_int_eq(c->mon[0].hp, 80 - 42);
}
END_TEST

START_TEST(playmath_end_turn_and_potions_follow_the_relics) {
    sf_feat *f = &feat_buf;
    sf_action acts[SF_MAX_ACTIONS];
    int n;
    /* Stone Calendar on turn 7: 52 to every monster, before the Burn; the
     * worm at 40 dies and the Burn never plays. */
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    set_hand(c, (const int[]){CARD_BURN}, 1);
    c->turn = 7;
    add_relic(c, RELIC_STONE_CALENDAR, 0);
    feats(&s, acts, &n);
    const float *q = qrow(f, acts, n, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 52.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_KILLS_ALL], 1.0f);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 0.0f);
    /* Without it: the Burn's 2 through Tungsten Rod costs 1 HP; Orichalcum
     * (no block) gives 6 first, which takes the Burn: 4 left, Chomp's 11
     * meets 4; an Ethereal Dazed exhausts: Charon's Ashes' 3. */
    s = jaw_worm(40);
    c = combat_of(&s);
    int hand2[] = {CARD_BURN, CARD_DAZED};
    set_hand(c, hand2, 2);
    add_relic(c, RELIC_TUNGSTEN_ROD, 0);
    add_relic(c, RELIC_CHARONS_ASHES, 0);
    feats(&s, acts, &n);
    q = qrow(f, acts, n, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 1.0f / 10.0f);
    ck_assert_feq(q[SF_FEAT_Q_DAMAGE], 3.0f / 50.0f);
    add_relic(c, RELIC_ORICHALCUM, 0);
    feats(&s, acts, &n);
    q = qrow(f, acts, n, SF_ACT_END_TURN, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], 0.0f);
    ck_assert_feq(q[SF_FEAT_Q_BLOCK], 6.0f / 50.0f);
    ck_assert_feq(q[SF_FEAT_Q_UNCOVERED], 7.0f / 50.0f);
    /* Toy Ornithopter heals 5 after a potion, 8 with Magic Flower. */
    c->hp = 60;
    c->potions[0] = POTION_BLOCK;
    add_relic(c, RELIC_TOY_ORNITHOPTER, 0);
    add_relic(c, RELIC_MAGIC_FLOWER, 0);
    feats(&s, acts, &n);
    q = qrow(f, acts, n, SF_ACT_POTION, 0, SF_NO_TARGET);
    ck_assert_feq(q[SF_FEAT_Q_SELF_HP], -8.0f / 10.0f);
    FX_DRINK(&s, 0, SF_NO_TARGET);
    ck_assert_int_eq(c->hp, 68);
}
END_TEST

/* Playmath predicts what the engine then does: over random positions of
 * fights with an attack-heavy deck, for every single-target attack, the
 * target dies exactly when LETHAL says so, and (without Curl Up / Mode
 * Shift, whose block lands after the card) the block and HP removed equal
 * PROGRESS x (HP + block); for every attack on all enemies, LETHAL is the
 * fraction the engine kills and KILLS_ALL says whether the fight is won. */
START_TEST(playmath_agrees_with_the_engine_on_single_target_attacks) {
    sf_fight_spec spec = fx_spec();
    sf_err err = {0};
    ck_assert_int_eq(sf_deck_parse("Strike*2,Bash,Twin Strike,Pommel Strike,Heavy Blade,"
                                   "Perfected Strike,Body Slam,Iron Wave,Clothesline,Uppercut,"
                                   "Searing Blow+,Rampage,Hemokinesis,Pummel,Bludgeon,Dropkick,"
                                   "Inflame,Flex,Defend*3,Feed,Fiend Fire,Anger,Wild Strike,"
                                   "Double Tap,Limit Break,Rupture,Shrug It Off,Rage,Cleave,"
                                   "Thunderclap,Whirlwind,Immolate",
                                   &spec, &err),
                     SF_OK);
    sf_feat *f = &feat_buf;
    int checked = 0, lethal = 0, checked_all = 0;
    for (int fightno = 0; fightno < 80; fightno++) {
        spec.encounter = fightno % ENC_COUNT;
        spec.seed = 900 + (uint64_t)fightno;
        sf_state s;
        ck_assert_int_eq(sf_engine_init(&s, &spec, &err), SF_OK);
        uint64_t r = 0xA5A5A5A5ull + (uint64_t)fightno;
        while (!sf_engine_is_terminal(&s)) {
            const sf_combat *c = ccombat_of(&s);
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            sf_engine_feat(&s, acts, n, f);
            for (int q = 0; q < n; q++) {
                sf_action a = acts[q];
                if (a.kind != SF_ACT_PLAY || sf_cards[c->hand[a.index].id].type != CT_ATTACK)
                    continue;
                if (sf_cards[c->hand[a.index].id].target == TGT_ALL) {
                    /* ALL cards: LETHAL is the fraction of monsters killed. */
                    int alive = combat_alive_count(c);
                    sf_state t = s;
                    ck_assert_int_eq(sf_engine_apply(&t, a, NULL), SF_OK);
                    const sf_combat *ct = ccombat_of(&t);
                    if (ct->flags & FL_LOST)
                        continue;
                    int killed = alive - combat_alive_count(ct);
                    ck_assert_msg(
                        fabsf(f->qcont[q][SF_FEAT_Q_LETHAL] * (float)alive - (float)killed) < 0.01f,
                        "%s: engine killed %d of %d, playmath %.2f",
                        sf_cards[c->hand[a.index].id].name, killed, alive,
                        f->qcont[q][SF_FEAT_Q_LETHAL]);
                    ck_assert_int_eq(f->qcont[q][SF_FEAT_Q_KILLS_ALL] == 1.0f,
                                     (ct->flags & FL_WON) != 0);
                    checked_all++;
                    continue;
                }
                if (a.target == SF_NO_TARGET)
                    continue; /* Sword Boomerang-like random targets */
                int m = a.target, alive = combat_alive_count(c);
                const sf_monster before = c->mon[m];
                sf_state t = s;
                ck_assert_int_eq(sf_engine_apply(&t, a, NULL), SF_OK);
                const sf_combat *ct = ccombat_of(&t);
                if ((ct->flags & FL_LOST) || ct->phase == PH_CHOICE)
                    continue; /* died to Hemokinesis; Headbutt-like screens keep the dead */
                int died = combat_alive_count(ct) < alive || (ct->flags & FL_WON);
                ck_assert_msg(died == (f->qcont[q][SF_FEAT_Q_LETHAL] == 1.0f),
                              "%s -> %s: engine %s, playmath lethal %.2f",
                              sf_cards[c->hand[a.index].id].name, sf_monsters[before.id].name,
                              died ? "killed it" : "did not", f->qcont[q][SF_FEAT_Q_LETHAL]);
                lethal += died;
                if (!died && before.pw[PW_CURL_UP] == 0 && before.id != MON_GUARDIAN &&
                    ct->n_mon == c->n_mon) {
                    const sf_monster *after = &ct->mon[m];
                    int removed = before.hp - after->hp + before.block - after->block;
                    float want =
                        f->qcont[q][SF_FEAT_Q_PROGRESS] * (float)(before.hp + before.block);
                    ck_assert_msg(fabsf((float)removed - want) < 0.01f,
                                  "%s -> %s: removed %d, playmath %.2f (hp %d->%d, block %d->%d, "
                                  "player block %d str %d weak %d dtap %d)",
                                  sf_cards[c->hand[a.index].id].name, sf_monsters[before.id].name,
                                  removed, want, before.hp, after->hp, before.block, after->block,
                                  c->block, c->pw[PW_STR], c->pw[PW_WEAK], c->pw[PW_DOUBLE_TAP]);
                }
                checked++;
            }
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            ck_assert_int_eq(sf_engine_apply(&s, acts[r % (uint64_t)n], NULL), SF_OK);
        }
    }
    ck_assert_int_gt(checked, 2000);
    ck_assert_int_gt(lethal, 50);
    ck_assert_int_gt(checked_all, 200);
}
END_TEST

/* ---- playmath against play: every card, every legal position ------------ */

/* The soak behind playmath: seeded random fights over every encounter (in
 * turn) with decks from the whole Ironclad pool (two cards walk the pool so
 * every card is dealt with and without its upgrade, the rest random;
 * Searing Blow up to +4), random relics, potions, HP and Pen Nib counter,
 * and, at one player decision in five, random powers on both sides
 * (pm_perturb). At every decision of the player's turn each legal PLAY is
 * applied to copies of the position with play_from_hand() on the combat
 * itself, so monster slots stay put (a choice screen it opens takes its
 * first option), and compared with its query and its card token:
 *
 *  (1) the token: CA_DAMAGE x CA_HITS (x the living monsters for an ALL
 *      card) is the HP an Attack takes from monsters at 999 HP with no
 *      block, Vulnerable or Curl Up, no Double Tap and none of the relics
 *      whose damage is not the card's (Boot, Charon's Ashes, Letter
 *      Opener: pm_drop_damage_relics) ("T"): per-hit damage with the
 *      player's modifiers, the hits (Twin Strike, Pummel, Sword Boomerang,
 *      Whirlwind's X, Fiend Fire's hand) and the computed bases (Body
 *      Slam, Perfected Strike, Searing Blow, Rampage).
 *  (2) DAMAGE, for every card: with every monster at 999 HP ("H": nothing
 *      dies, every hit shows) it is the HP and block the monsters lose (the
 *      block their own reactions add in between counted back: Curl Up,
 *      Mode Shift's 20), Vulnerable targets, Double Tap's copy, Curl Up's
 *      block before the copy, the Vulnerable the card gives before its
 *      copy, Boot, Charon's Ashes and Letter Opener (a Skill's only
 *      damage) included; what Ink Bottle, Dead Branch, Gremlin Horn and
 *      Nunchaku bring before a copy too.
 *  (3) on the position itself, for every card: LETHAL and KILLS_ALL
 *      against the monsters that die and the fight won; PROGRESS against
 *      the HP and block removed; BLOCK against the block the player gains (Dexterity, Frail,
 *      an Attack's block again with its copy, Rage, Feel No Pain for every
 *      card exhausted, choice screens included, Second Wind, Entrench);
 *      SELF_HP against the HP the player loses, net of the heals (Bird-
 *      Faced Urn, Magic Flower, Lizard Tail; Tungsten Rod, Fossilized
 *      Helix's Buffer and Torii on the way).
 *
 * Left out because the outcome is random or rests on cards nobody has
 * seen: a random target among several monsters (Sword Boomerang: DAMAGE is
 * an expected value, compared only when every monster takes the same per
 * hit and, with Boot, none has block, so the total is certain; no LETHAL
 * or PROGRESS); draws (Fire
 * Breathing's damage and Evolve's draws for the statuses drawn, Dark
 * Embrace's draws, which refill the hand for a Fiend Fire or Sever Soul
 * copy; Fire Breathing's damage when it is played as Ink Bottle draws).
 * Juggernaut's THORNS damage goes to a random monster and is not the
 * card's damage (playmath leaves it out even with one monster alive, where
 * it is certain); nor are the THORNS damage of Sadistic Nature (per
 * debuff applied) and Panache (every fifth card), powers' reactions queued
 * behind the card as Fire Breathing's are. The prediction reads none of
 * these powers, so they are switched off on the copies (pm_neutral). Not comparable after the fact:
 * PROGRESS when a monster with Curl Up dies (whether its block came first
 * does not show), BLOCK after Sharp Hide has taken some (SELF_HP covers
 * what gets through) or when the play ends the fight (queued block is
 * dropped), SELF_HP for healing cards. What the prediction knowingly does
 * not follow is listed in pm_gaps: each gap skips the checks it spoils
 * where it applies, and is counted. */

static uint64_t pm_next(uint64_t *r) {
    *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
    return *r;
}
static int pm_rnd(uint64_t *r, int n) {
    return (int)(pm_next(r) % (uint64_t)n);
}

#define PM_POOL (CARD_REAPER - CARD_STRIKE + 1) /* the Ironclad cards */
/* ... and the colorless ones after them */
#define PM_CARDS (PM_POOL + CARD_LAST_COLORLESS - CARD_FIRST_COLORLESS + 1)

static int pm_card(int i) {
    return i < PM_POOL ? CARD_STRIKE + i : CARD_FIRST_COLORLESS + i - PM_POOL;
}

static void pm_spec(int k, sf_fight_spec *spec, uint64_t *r) {
    sf_fight_spec_default(spec);
    spec->encounter = k % ENC_COUNT;
    spec->seed = 0xC0FFEEull + (uint64_t)k;
    spec->floor = pm_rnd(r, 17);
    if (pm_rnd(r, 2))
        spec->deck_n = 0; /* random cards only */
    for (int j = 0; j < 2; j++) {
        int id = pm_card((2 * k + j) % PM_CARDS);
        spec->deck[spec->deck_n++] = (sf_card_spec){(uint8_t)id, (uint8_t)((k / PM_CARDS + j) & 1)};
    }
    int add = 8 + pm_rnd(r, 18);
    for (int i = 0; i < add && spec->deck_n < SF_MAX_DECK; i++)
        spec->deck[spec->deck_n++] =
            (sf_card_spec){(uint8_t)pm_card(pm_rnd(r, PM_CARDS)), (uint8_t)pm_rnd(r, 2)};
    for (int i = 0; i < spec->deck_n; i++)
        if (spec->deck[i].id == CARD_SEARING_BLOW && spec->deck[i].upgrades)
            spec->deck[i].upgrades = (uint8_t)(1 + pm_rnd(r, 4));
    int nrel = pm_rnd(r, 6);
    for (int i = 0; i < nrel; i++) {
        int rel = 2 + pm_rnd(r, RELIC_COUNT - 2), dup = 0;
        for (int j = 0; j < spec->relics_n; j++)
            dup |= spec->relics[j] == rel;
        if (!dup)
            spec->relics[spec->relics_n++] = (uint8_t)rel;
    }
    for (int i = 0; i < SF_POTION_SLOTS; i++)
        spec->potions[i] = (uint8_t)(pm_rnd(r, 3) ? 0 : 1 + pm_rnd(r, POTION_COUNT - 1));
    spec->max_hp = 40 + pm_rnd(r, 60);
    spec->hp = 1 + pm_rnd(r, spec->max_hp);
    for (int i = 0; i < spec->relics_n; i++) {
        int max = sf_relic_counter_max(spec->relics[i]);
        spec->relic_counters[i] = max ? pm_rnd(r, (uint32_t)max) : 0;
        if (max == SF_MAX_DECK + 1) /* a Bottled relic: 1 + a deck index, or 0 */
            spec->relic_counters[i] %= spec->deck_n + 1;
    }
}

/* Powers and block as earlier cards might have left them. */
static void pm_perturb(sf_combat *c, uint64_t *r) {
    static const struct {
        int pw, lo, hi, one_in;
    } player[] = {{PW_STR, -2, 6, 2},       {PW_DEX, -2, 4, 2},       {PW_WEAK, 1, 2, 4},
                  {PW_FRAIL, 1, 2, 4},      {PW_VIGOR, 1, 8, 6},      {PW_PEN_NIB, 1, 1, 8},
                  {PW_RAGE, 1, 5, 5},       {PW_DOUBLE_TAP, 1, 2, 4}, {PW_FNP, 1, 4, 5},
                  {PW_CORRUPTION, 1, 1, 12}};
    for (size_t i = 0; i < sizeof player / sizeof player[0]; i++)
        if (pm_rnd(r, player[i].one_in) == 0)
            c->pw[player[i].pw] =
                (int16_t)(player[i].lo + pm_rnd(r, player[i].hi - player[i].lo + 1));
    if (pm_rnd(r, 3) == 0)
        c->block = (int16_t)pm_rnd(r, 25);
    for (int m = 0; m < c->n_mon; m++) {
        sf_monster *mo = &c->mon[m];
        if (pm_rnd(r, 3) == 0)
            mo->pw[PW_VULN] = (int16_t)(1 + pm_rnd(r, 2));
        if (pm_rnd(r, 5) == 0)
            mo->pw[PW_WEAK] = (int16_t)(1 + pm_rnd(r, 2));
        if (pm_rnd(r, 10) == 0)
            mo->pw[PW_ARTIFACT] = 1;
        if (pm_rnd(r, 4) == 0)
            mo->block = (int16_t)pm_rnd(r, 16);
    }
}

/* Powers whose reactions to a play are outside playmath (see above). */
static void pm_neutral(sf_combat *c) {
    c->pw[PW_JUGGERNAUT] = c->pw[PW_FIRE_BREATHING] = 0;
    c->pw[PW_DARK_EMBRACE] = c->pw[PW_EVOLVE] = 0;
    c->pw[PW_SADISTIC] = c->pw[PW_PANACHE] = 0;
}

/* The relics whose damage is not the card's own (the token leaves them
 * out): Boot's after block, Charon's Ashes' and Letter Opener's THORNS. */
static void pm_drop_damage_relics(sf_combat *c) {
    for (int i = 0; i < c->relic_n;) {
        int r = c->relics[i];
        if (r != RELIC_BOOT && r != RELIC_CHARONS_ASHES && r != RELIC_LETTER_OPENER) {
            i++;
            continue;
        }
        c->relic_n--;
        for (int j = i; j < c->relic_n; j++) {
            c->relics[j] = c->relics[j + 1];
            c->relic_counter[j] = c->relic_counter[j + 1];
        }
        c->relics[c->relic_n] = 0;
        c->relic_counter[c->relic_n] = 0;
    }
}

/* Play hand card i at t on `c` itself, answering any choice screen it opens
 * with its first option. */
static void pm_play(sf_combat *c, int i, int t) {
    pm_neutral(c);
    if (play_from_hand(c, i, t) != SF_OK)
        ck_abort_msg("%s at %d: not playable", sf_cards[c->hand[i].id].name, t);
    while (c->phase == PH_CHOICE) {
        uint8_t opts[SF_MAX_PILE];
        if (combat_choice_options(c, c->pending.kind, opts, NULL) == 0 ||
            play_choose(c, opts[0]) != SF_OK)
            ck_abort_msg("choice %d: no option", c->pending.kind);
    }
}

/* Block and HP a monster lost to the play, the block its own reactions
 * added in between counted back (Curl Up, the Guardian's Mode Shift). */
static int pm_removed(const sf_monster *b, const sf_monster *a) {
    int added = 0;
    if (!(a->flags & MF_DEAD)) {
        if (b->pw[PW_CURL_UP] > 0 && a->pw[PW_CURL_UP] == 0)
            added += b->pw[PW_CURL_UP];
        if (!(b->flags & MF_DEFENSIVE) && (a->flags & MF_DEFENSIVE))
            added += 20;
    }
    return (b->hp - a->hp) + (b->block + added - a->block);
}

/* The checks a gap spoils. */
enum { PM_DAMAGE = 1, PM_BLOCK = 2, PM_SELF_HP = 4 };

/* Known gaps: what playing the card does that the prediction does not
 * follow, although it is certain or visible (docs/model.md "Not
 * modelled"), and the one place where the measure cannot see what the
 * prediction means (Fairy in a Bottle). */
typedef struct pm_gap {
    const char *what;
    int spoils;
    long seen;
} pm_gap;

enum {
    GAP_HAVOC,
    GAP_RED_SKULL_HEAL,
    GAP_HEAL_SHARP,
    GAP_MODE_SHIFT_COPY,
    GAP_FAIRY,
    GAP_TRIPLE,
    GAP_UNSEEN_COPY,
    GAP_PURITY,
    GAP_ABACUS,
    GAP_SPOON,
    GAP_N
};

static pm_gap pm_gaps[GAP_N] = {
    [GAP_HAVOC] = {"Havoc: the top card it plays (certain when known and one monster lives)",
                   PM_DAMAGE | PM_BLOCK | PM_SELF_HP, 0},
    [GAP_RED_SKULL_HEAL] = {"Double Tap: a heal (Reaper, Feed) turns Red Skull off before the copy",
                            PM_DAMAGE, 0},
    [GAP_HEAL_SHARP] = {"A heal (Reaper, Feed) outlives Sharp Hide's answer (HP + block <= it): "
                        "the copy and Charon's Ashes after it",
                        PM_DAMAGE, 0},
    [GAP_MODE_SHIFT_COPY] = {"Double Tap: the Guardian's Mode Shift block before the copy",
                             PM_DAMAGE, 0},
    [GAP_FAIRY] = {"Fairy in a Bottle: SELF_HP is the HP lost before it refills them (HP <= 12)",
                   PM_SELF_HP, 0},
    [GAP_TRIPLE] = {"Double Tap and Duplication at once: the third play",
                    PM_DAMAGE | PM_BLOCK | PM_SELF_HP, 0},
    [GAP_UNSEEN_COPY] = {"Double Tap or Duplication: Sever Soul's, Second Wind's or Perfected "
                         "Strike's copy after a card reached the hand unseen (Ink Bottle's, "
                         "Centennial Puzzle's or Gremlin Horn's draw past the known top, Dead "
                         "Branch's random card): it counts as no Attack, no Strike",
                         PM_DAMAGE | PM_BLOCK, 0},
    [GAP_PURITY] = {"Purity: how many cards it exhausts (up to 3, 5 upgraded) is picked on its "
                    "screen after the play, so Feel No Pain's block and Charon's Ashes' damage "
                    "for them are not known",
                    PM_DAMAGE | PM_BLOCK, 0},
    [GAP_ABACUS] = {"The Abacus: the 6 block of a shuffle that a draw during the play starts "
                    "(Deep Breath, the card's own draws, Ink Bottle's, Gremlin Horn's; the "
                    "playmath follows no draw), with a discard pile to shuffle",
                    PM_BLOCK, 0},
    [GAP_SPOON] = {"Strange Spoon: whether the played card exhausts is a coin flip "
                   "(cardRandomRng) thrown when it is used, so Feel No Pain's block and Charon's "
                   "Ashes' damage for it are a chance",
                   PM_DAMAGE | PM_BLOCK, 0},
};

/* The counter of `relic`, -1 without it. */
static int pm_counter(const sf_combat *c, int relic) {
    int i = combat_relic_slot(c, relic);
    return i < 0 ? -1 : c->relic_counter[i];
}

/* The checks that known gaps spoil for playing hand card i of `c`. */
static int pm_gaps_of(const sf_combat *c, int i) {
    const sf_card *k = &c->hand[i];
    const card_def *d = &sf_cards[k->id];
    int attack = d->type == CT_ATTACK, dt = attack && c->pw[PW_DOUBLE_TAP] > 0;
    int triple = dt && c->pw[PW_DUPLICATION] > 0;
    dt |= c->pw[PW_DUPLICATION] > 0; /* a copy of any card */
    int sharp = 0, shift = 0, fairy = 0, sharp_hide = 0;
    for (int m = 0; m < c->n_mon; m++) {
        sharp |= combat_alive(c, m) && c->mon[m].pw[PW_SHARP_HIDE] > 0;
        sharp_hide += combat_alive(c, m) ? c->mon[m].pw[PW_SHARP_HIDE] : 0;
        shift |= combat_alive(c, m) && c->mon[m].pw[PW_MODE_SHIFT] > 0;
    }
    for (int s = 0; s < SF_MAX_POTION_SLOTS; s++)
        fairy |= c->potions[s] == POTION_FAIRY && c->hp <= 12;
    int non_attacks = 0;
    for (int j = 0; j < c->hand_n; j++)
        non_attacks += sf_cards[c->hand[j].id].type != CT_ATTACK;
    int costs_hp = k->id == CARD_HEMOKINESIS || k->id == CARD_BLOODLETTING ||
                   k->id == CARD_OFFERING || (attack && sharp);
    int on[GAP_N] = {
        [GAP_HAVOC] = k->id == CARD_HAVOC,
        [GAP_RED_SKULL_HEAL] =
            dt && (d->flags & CD_HEALING) && combat_has_relic(c, RELIC_RED_SKULL),
        [GAP_HEAL_SHARP] = (d->flags & CD_HEALING) && sharp && c->hp + c->block <= sharp_hide,
        [GAP_MODE_SHIFT_COPY] = dt && shift,
        [GAP_FAIRY] = fairy && costs_hp,
        [GAP_TRIPLE] = triple,
        [GAP_UNSEEN_COPY] =
            dt &&
            (k->id == CARD_SEVER_SOUL || k->id == CARD_SECOND_WIND ||
             k->id == CARD_PERFECTED_STRIKE) &&
            (pm_counter(c, RELIC_INK_BOTTLE) == 9 ||
             ((k->id == CARD_SEVER_SOUL || k->id == CARD_SECOND_WIND) && non_attacks > 0 &&
              combat_has_relic(c, RELIC_DEAD_BRANCH)) ||
             (sharp && pm_counter(c, RELIC_CENTENNIAL_PUZZLE) == 0) ||
             (combat_has_relic(c, RELIC_GREMLIN_HORN) && combat_has_relic(c, RELIC_CHARONS_ASHES))),
        [GAP_PURITY] =
            k->id == CARD_PURITY && (c->pw[PW_FNP] > 0 || combat_has_relic(c, RELIC_CHARONS_ASHES)),
        [GAP_ABACUS] = combat_has_relic(c, RELIC_ABACUS) && (c->discard_n > 0 || dt),
        [GAP_SPOON] =
            combat_has_relic(c, RELIC_STRANGE_SPOON) && d->type != CT_POWER && card_exhausts(c, k),
    };
    int spoiled = 0;
    for (int g = 0; g < GAP_N; g++) {
        if (!on[g])
            continue;
        pm_gaps[g].seen++;
        spoiled |= pm_gaps[g].spoils;
    }
    return spoiled;
}

static int pm_int(float v, float scale) {
    return (int)lroundf(v * scale);
}

static const char *pm_ctx(const sf_combat *c) {
    static char buf[1024];
    int n =
        snprintf(buf, sizeof buf,
                 " [str %d dex %d weak %d frail %d vigor %d nib %d dtap %d rage %d fnp %d "
                 "corruption %d block %d hp %d energy %d hand %d attacks %d;",
                 c->pw[PW_STR], c->pw[PW_DEX], c->pw[PW_WEAK], c->pw[PW_FRAIL], c->pw[PW_VIGOR],
                 c->pw[PW_PEN_NIB], c->pw[PW_DOUBLE_TAP], c->pw[PW_RAGE], c->pw[PW_FNP],
                 c->pw[PW_CORRUPTION], c->block, c->hp, c->energy, c->hand_n, c->attacks_played);
    for (int i = 0; i < c->relic_n && n < 400; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " %s:%d", sf_relics[c->relics[i]].name,
                      c->relic_counter[i]);
    n += snprintf(buf + n, sizeof buf - (size_t)n, "; hand");
    for (int i = 0; i < c->hand_n && n < 700; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " %s%s", sf_cards[c->hand[i].id].name,
                      c->hand[i].upg ? "+" : "");
    for (int m = 0; m < c->n_mon && n < 900; m++)
        n += snprintf(buf + n, sizeof buf - (size_t)n, " | %s hp %d block %d vuln %d curl %d",
                      sf_monsters[c->mon[m].id].name, c->mon[m].hp, c->mon[m].block,
                      c->mon[m].pw[PW_VULN], c->mon[m].pw[PW_CURL_UP]);
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    return buf;
}

/* SF_PLAYMATH_REPORT=1 prints every disagreement and carries on. */
static int pm_report;
static long pm_failures;

#define PM_CHECK(c, cond, ...)                  \
    do {                                        \
        if (!(cond)) {                          \
            pm_failures++;                      \
            if (!pm_report)                     \
                ck_abort_msg(__VA_ARGS__);      \
            fprintf(stderr, __VA_ARGS__);       \
            fprintf(stderr, "%s\n", pm_ctx(c)); \
        }                                       \
    } while (0)

static sf_feat pm_feat_h, pm_feat_t;

START_TEST(playmath_equals_what_playing_does_for_every_card) {
    pm_report = getenv("SF_PLAYMATH_REPORT") != NULL;
    int fights = 2000;
    const char *e = getenv("SF_PLAYMATH_FIGHTS");
    if (e && atoi(e) > 0)
        fights = atoi(e);
    static long played[CARD_COUNT][2];
    memset(played, 0, sizeof played);
    long positions = 0, plays = 0, tokens = 0, damage = 0, lethal = 0, kills = 0, blocks = 0;
    long self = 0;
    long str = 0, dex = 0, weak = 0, frail = 0, vuln = 0, dtap = 0;
    sf_feat *f = &feat_buf;
    for (int k = 0; k < fights; k++) {
        uint64_t r = 0x51DEC0DEull * (uint64_t)(k + 1) | 1;
        sf_fight_spec spec;
        pm_spec(k, &spec, &r);
        sf_state s;
        sf_err err = {0};
        ck_assert_msg(sf_engine_init(&s, &spec, &err) == SF_OK, "%s", err.msg);
        for (int step = 0; step < 600 && !sf_engine_is_terminal(&s); step++) {
            sf_combat *c = combat_of(&s);
            if (c->phase == PH_PLAYER && pm_rnd(&r, 5) == 0)
                pm_perturb(c, &r);
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            if (c->phase != PH_PLAYER)
                goto next;
            positions++;
            str += c->pw[PW_STR] != 0, dex += c->pw[PW_DEX] != 0, weak += c->pw[PW_WEAK] > 0;
            frail += c->pw[PW_FRAIL] > 0, dtap += c->pw[PW_DOUBLE_TAP] > 0;
            for (int m = 0; m < c->n_mon; m++)
                vuln += c->mon[m].pw[PW_VULN] > 0;
            sf_engine_feat(&s, acts, n, f);
            sf_state h = s, t = s;
            sf_combat *ch = combat_of(&h), *ct = combat_of(&t);
            for (int m = 0; m < c->n_mon; m++) {
                ch->mon[m].hp = ch->mon[m].max_hp = 999;
                ct->mon[m] = ch->mon[m];
                ct->mon[m].pw[PW_VULN] = ct->mon[m].pw[PW_CURL_UP] = 0;
                ct->mon[m].block = 0;
            }
            ct->pw[PW_DOUBLE_TAP] = ct->pw[PW_DUPLICATION] = 0;
            pm_drop_damage_relics(ct);
            sf_engine_feat(&h, acts, n, &pm_feat_h);
            sf_engine_feat(&t, acts, n, &pm_feat_t);
            for (int q = 0; q < n; q++) {
                sf_action a = acts[q];
                if (a.kind != SF_ACT_PLAY)
                    continue;
                const sf_card card = c->hand[a.index];
                const card_def *d = &sf_cards[card.id];
                const char *name = d->name, *plus = card.upg ? "+" : "";
                int alive = combat_alive_count(c), attack = d->type == CT_ATTACK;
                int random = attack && card_target(&card) == TGT_NONE && alive > 1;
                int gaps = pm_gaps_of(c, a.index);
                /* Fire Breathing played as Ink Bottle draws: its damage for
                 * a status drawn is left out with the draws (see above) */
                if (card.id == CARD_FIRE_BREATHING && pm_counter(c, RELIC_INK_BOTTLE) == 9)
                    gaps |= PM_DAMAGE;
                played[card.id][card.upg > 0]++;
                plays++;

                /* (1) the card token on T */
                if (attack && !(gaps & PM_DAMAGE)) {
                    sf_state tt = t;
                    sf_combat *ctt = combat_of(&tt);
                    int hp0 = 0, hp1 = 0;
                    for (int m = 0; m < ctt->n_mon; m++)
                        hp0 += ctt->mon[m].hp;
                    pm_play(ctt, a.index, a.target);
                    for (int m = 0; m < ctt->n_mon; m++)
                        hp1 += ctt->mon[m].hp;
                    int tok = pm_feat_t.query[q][0];
                    int per = pm_int(pm_feat_t.cont[tok][7], 20.0f);
                    int hits = pm_int(pm_feat_t.cont[tok][8], 5.0f);
                    int targets = card_target(&card) == TGT_ALL ? alive : 1;
                    if (!(ctt->flags & FL_LOST)) {
                        PM_CHECK(c, hp0 - hp1 == per * hits * targets,
                                 "token %s%s: %d per hit x %d hits x %d, the play took %d", name,
                                 plus, per, hits, targets, hp0 - hp1);
                        tokens++;
                    }
                }

                /* (2) DAMAGE on H */
                if (!(gaps & PM_DAMAGE)) {
                    sf_state hh = h;
                    sf_combat *chh = combat_of(&hh);
                    pm_play(chh, a.index, a.target);
                    int removed = 0, same = 1;
                    for (int m = 0; m < ch->n_mon; m++) {
                        removed += pm_removed(&ch->mon[m], &chh->mon[m]);
                        same &= (ch->mon[m].pw[PW_VULN] > 0) == (ch->mon[0].pw[PW_VULN] > 0);
                        /* Boot after block: which monster a hit finds matters */
                        same &= !combat_has_relic(c, RELIC_BOOT) || ch->mon[m].block == 0;
                        /* Hand Drill: which monster's block a hit breaks before the copy */
                        same &= !combat_has_relic(c, RELIC_HAND_DRILL) || ch->mon[m].block == 0;
                    }
                    int want = pm_int(pm_feat_h.qcont[q][SF_FEAT_Q_DAMAGE], 50.0f);
                    if (!(chh->flags & FL_LOST) && (!random || same)) {
                        PM_CHECK(c, removed == want, "damage %s%s -> %d: predicted %d, removed %d",
                                 name, plus, a.target, want, removed);
                        damage++;
                    }
                }

                /* (3) the position itself */
                sf_state rr = s;
                sf_combat *cr = combat_of(&rr);
                pm_play(cr, a.index, a.target);
                const float *qv = f->qcont[q];
                int over = cr->phase == PH_OVER, lost = (cr->flags & FL_LOST) != 0;
                int sharp = 0;
                for (int m = 0; m < c->n_mon; m++)
                    sharp |= attack && combat_alive(c, m) && c->mon[m].pw[PW_SHARP_HIDE] > 0;
                if (!random && !lost && !(gaps & PM_DAMAGE)) {
                    int died = 0, removed = 0, ehp = 0, curl_died = 0;
                    for (int m = 0; m < c->n_mon; m++) {
                        if (!combat_alive(c, m) ||
                            (card_target(&card) == TGT_ENEMY && m != a.target))
                            continue;
                        int dead = (cr->mon[m].flags & MF_DEAD) != 0;
                        died += dead;
                        curl_died |= dead && c->mon[m].pw[PW_CURL_UP] > 0;
                        removed += pm_removed(&c->mon[m], &cr->mon[m]);
                        ehp += c->mon[m].hp + c->mon[m].block;
                    }
                    kills += died;
                    lethal++;
                    if (card_target(&card) == TGT_ENEMY)
                        PM_CHECK(c, (qv[SF_FEAT_Q_LETHAL] == 1.0f) == (died == 1),
                                 "lethal %s%s: predicted %.2f, the target %s", name, plus,
                                 qv[SF_FEAT_Q_LETHAL], died ? "died" : "lived");
                    else
                        PM_CHECK(c, pm_int(qv[SF_FEAT_Q_LETHAL], (float)alive) == died,
                                 "lethal %s%s: predicted %.2f of %d, %d died", name, plus,
                                 qv[SF_FEAT_Q_LETHAL], alive, died);
                    PM_CHECK(c, (qv[SF_FEAT_Q_KILLS_ALL] == 1.0f) == ((cr->flags & FL_WON) != 0),
                             "kills-all %s%s: predicted %.0f", name, plus, qv[SF_FEAT_Q_KILLS_ALL]);
                    if (!curl_died && ehp > 0) {
                        float want = fminf((float)removed / (float)ehp, 1.0f);
                        PM_CHECK(c, fabsf(qv[SF_FEAT_Q_PROGRESS] - want) < 1e-4f,
                                 "progress %s%s: predicted %.4f, removed %d of %d", name, plus,
                                 qv[SF_FEAT_Q_PROGRESS], removed, ehp);
                    }
                }
                if (!over && !sharp && !(gaps & PM_BLOCK)) {
                    int want = pm_int(qv[SF_FEAT_Q_BLOCK], 50.0f);
                    want = (c->block + want > 999 ? 999 : c->block + want) - c->block;
                    PM_CHECK(c, cr->block - c->block == want,
                             "block %s%s: predicted %d, the play gave %d", name, plus, want,
                             cr->block - c->block);
                    blocks++;
                }
                if (!over && !(d->flags & CD_HEALING) && !(gaps & PM_SELF_HP)) {
                    int want = pm_int(qv[SF_FEAT_Q_SELF_HP], 10.0f);
                    PM_CHECK(c, c->hp - cr->hp == want, "self HP %s%s: predicted %d, cost %d", name,
                             plus, want, c->hp - cr->hp);
                    self++;
                }
            }
        next:
            if (sf_engine_apply(&s, acts[pm_rnd(&r, n)], NULL) != SF_OK)
                ck_abort_msg("fight %d step %d: a legal action failed", k, step);
        }
    }
    fprintf(stderr,
            "# playmath soak: %d fights, %ld positions (Strength %ld, Dexterity %ld, Weak %ld, "
            "Frail %ld, Double Tap %ld, Vulnerable monsters %ld), %ld plays; compared: %ld "
            "tokens, %ld damage, %ld lethal/progress (%ld kills), %ld block, %ld self HP; %ld "
            "disagreements\n",
            fights, positions, str, dex, weak, frail, dtap, vuln, plays, tokens, damage, lethal,
            kills, blocks, self, pm_failures);
    for (int g = 0; g < GAP_N; g++)
        fprintf(stderr, "#   known gap, %ld plays: %s\n", pm_gaps[g].seen, pm_gaps[g].what);
    for (int i = 0; i < PM_CARDS; i++)
        for (int u = 0; u < 2; u++)
            ck_assert_msg(played[pm_card(i)][u] > 0, "%s%s never played", sf_cards[pm_card(i)].name,
                          u ? "+" : "");
    ck_assert_int_gt(played[CARD_SLIMED][0], 0);
    ck_assert_int_gt(positions, 20000);
    ck_assert_int_gt(str, 1000);
    ck_assert_int_gt(dex, 1000);
    ck_assert_int_gt(weak, 1000);
    ck_assert_int_gt(frail, 1000);
    ck_assert_int_gt(dtap, 1000);
    ck_assert_int_gt(vuln, 1000);
    ck_assert_int_eq(pm_failures, 0);
}
END_TEST

/* ---- queries ------------------------------------------------------------- */

START_TEST(queries_point_at_the_acting_token_and_target) {
    sf_state s = fx_fight(ENC_GREMLIN_GANG, 5);
    sf_combat *c = combat_of(&s);
    c->potions[2] = POTION_WEAK;
    featq x = feats_of(&s);
    ck_assert_int_eq(x.f->n_queries, x.n);
    for (int q = 0; q < x.n; q++) {
        int what = x.f->query[q][0], target = x.f->query[q][1];
        ck_assert_int_lt(what, x.f->n_tokens);
        ck_assert_int_lt(target, x.f->n_tokens);
        switch (x.acts[q].kind) {
        case SF_ACT_PLAY:
            ck_assert_int_eq(x.f->type[what], SF_TOK_CARD_HAND);
            ck_assert_int_eq(x.f->cat[what][0], SF_FEAT_ID_CARD + c->hand[x.acts[q].index].id);
            break;
        case SF_ACT_POTION:
            ck_assert_int_eq(x.f->type[what], SF_TOK_POTION);
            ck_assert_int_eq(x.f->cat[what][3], x.acts[q].index);
            break;
        case SF_ACT_END_TURN: ck_assert_int_eq(x.f->type[what], SF_TOK_CTX); break;
        default: ck_abort_msg("unexpected action kind %d", x.acts[q].kind);
        }
        if (x.acts[q].target == SF_NO_TARGET) {
            ck_assert_int_eq(x.f->type[target], SF_TOK_PLAYER);
        } else {
            ck_assert_int_eq(x.f->type[target], SF_TOK_MONSTER);
            ck_assert_int_eq(x.f->cat[target][3], 1 + x.acts[q].target);
            ck_assert_int_eq(x.f->cat[target][0], SF_FEAT_ID_MONSTER + c->mon[x.acts[q].target].id);
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
    featq x = feats_of(&s);
    ck_assert_int_eq(x.n, 2);
    ck_assert_int_eq(x.f->cat[0][1], CH_HEADBUTT); /* CTX names the open choice */
    int ids[2] = {-1, -1};
    for (int q = 0; q < x.n; q++) {
        ck_assert_int_eq(x.acts[q].kind, SF_ACT_CHOOSE);
        int what = x.f->query[q][0];
        ck_assert_int_eq(x.f->type[what], SF_TOK_CARD_DISCARD);
        ck_assert_int_eq(x.f->type[x.f->query[q][1]], SF_TOK_PLAYER);
        ids[q] = x.f->cat[what][0] - SF_FEAT_ID_CARD;
        sf_action_info info;
        ck_assert_int_eq(sf_engine_action_info(&s, x.acts[q], &info), SF_OK);
        ck_assert_int_eq(ids[q], info.card_id);
    }
    ck_assert_int_ne(ids[0], ids[1]);
}
END_TEST

START_TEST(potion_screens_name_offers_picks_and_done) {
    /* Skill Potion: the three offers are hand-card tokens marked 15, one
     * per query, in option order. */
    sf_state s = jaw_worm(40);
    sf_combat *c = combat_of(&s);
    int hand[] = {CARD_STRIKE, CARD_STRIKE, CARD_DEFEND};
    set_hand(c, hand, 3);
    c->potions[0] = POTION_SKILL;
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_POTION, 0, SF_NO_TARGET, 0}, NULL),
                     SF_OK);
    featq x = feats_of(&s);
    ck_assert_int_eq(x.n, 3);
    ck_assert_int_eq(x.f->cat[0][1], CH_DISCOVERY);
    for (int q = 0; q < x.n; q++) {
        int what = x.f->query[q][0];
        ck_assert_int_eq(x.f->type[what], SF_TOK_CARD_HAND);
        ck_assert_int_eq(x.f->cat[what][3], 15);
        ck_assert_int_eq(x.f->cat[what][0], SF_FEAT_ID_CARD + c->pending.offer[q].id);
    }
    /* Elixir: after picking the first Strike, it is a token of its own
     * (marked 14) apart from the second; "done" names the CTX token */
    s = jaw_worm(40);
    c = combat_of(&s);
    set_hand(c, hand, 3);
    c->potions[1] = POTION_ELIXIR;
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_POTION, 1, SF_NO_TARGET, 0}, NULL),
                     SF_OK);
    ck_assert_int_eq(sf_engine_apply(&s, (sf_action){SF_ACT_CHOOSE, 0, SF_NO_TARGET, 0}, NULL),
                     SF_OK);
    x = feats_of(&s);
    ck_assert_int_eq(x.n, 3); /* the second Strike, Defend, done */
    ck_assert_int_eq(x.acts[0].index, 1);
    ck_assert_int_eq(x.acts[2].index, CHOICE_DONE);
    int strike2 = x.f->query[0][0];
    ck_assert_int_eq(x.f->cat[strike2][3], 0);
    ck_assert_int_eq(x.f->query[2][0], 0); /* CTX */
    int marked = 0;
    for (int t = 0; t < x.f->n_tokens; t++)
        marked += x.f->type[t] == SF_TOK_CARD_HAND && x.f->cat[t][3] == 14 &&
                  x.f->cat[t][0] == SF_FEAT_ID_CARD + CARD_STRIKE;
    ck_assert_int_eq(marked, 1);
    /* the last potion ids fit the potion range */
    s = jaw_worm(40);
    c = combat_of(&s);
    c->potions[2] = POTION_CULTIST;
    x = feats_of(&s);
    int found = 0;
    for (int t = 0; t < x.f->n_tokens; t++)
        found |=
            x.f->type[t] == SF_TOK_POTION && x.f->cat[t][0] == SF_FEAT_ID_POTION + POTION_CULTIST;
    ck_assert(found);
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
            sf_state a = fx_fight(enc, 1000 + (uint64_t)enc);
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

/* What the playmath's scratch copy draws or makes at random before a Double
 * Tap copy (Ink Bottle's draw, Dead Branch's card, Gremlin Horn's draw) is
 * counted, never known: hidden draw order and random rolls change nothing. */
START_TEST(playmath_reads_no_hidden_card_before_a_copy) {
    static const int hands[][3] = {{CARD_SEVER_SOUL, CARD_DEFEND, CARD_INFLAME},
                                   {CARD_FIEND_FIRE, CARD_DEFEND, CARD_STRIKE},
                                   {CARD_PERFECTED_STRIKE, CARD_DEFEND, CARD_TRUE_GRIT}};
    for (int h = 0; h < 3; h++) {
        sf_state a = jaw_worm(40);
        sf_combat *c = combat_of(&a);
        int draw[] = {CARD_STRIKE, CARD_DEFEND, CARD_BASH, CARD_SHRUG_IT_OFF, CARD_TWIN_STRIKE};
        set_hand(c, hands[h], 3);
        set_draw(c, draw, 5);
        c->pw[PW_DOUBLE_TAP] = 1;
        add_relic(c, RELIC_INK_BOTTLE, 9);
        add_relic(c, RELIC_DEAD_BRANCH, 0);
        add_relic(c, RELIC_CHARONS_ASHES, 0);
        c->pw[PW_FNP] = 3;
        sf_state b = a;
        reverse_unknown_draw(&b);
        for (int i = 0; i < SF_NUM_STREAMS; i++)
            sf_engine_reseed(&b, i, 0xFEEDull + (uint64_t)i);
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(&a, acts, SF_MAX_ACTIONS);
        sf_engine_feat(&a, acts, n, &feat_buf);
        sf_engine_feat(&b, acts, n, &feat_other);
        ck_assert_msg(memcmp(&feat_buf, &feat_other, sizeof feat_buf) == 0, "hand %d differs", h);
        sf_state root;
        sf_engine_belief_root(&a, 5, &root);
        sf_engine_feat(&root, acts, n, &feat_other);
        ck_assert_msg(memcmp(&feat_buf, &feat_other, sizeof feat_buf) == 0,
                      "hand %d: belief root differs", h);
    }
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
    set_hand(c, (const int[]){CARD_STRIKE, CARD_DEFEND, CARD_BASH}, 3);

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
        sf_state s = fx_fight(fightno % ENC_COUNT, 500 + (uint64_t)fightno);
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

#include "test-engine-feat.tests.h" /* SF_TESTS: every test above (tests/meson.build) */
SF_CHECK_MAIN("engine-feat", "feat", 120, NULL, NULL)
