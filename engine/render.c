/*
 * render.c — a state as text, for logs, debugging and sf-play.
 */
#include <stdarg.h>
#include <stdio.h>

#include "engine/internal.h"

const char *const sf_power_names[PW_N] = {
    [PW_STR] = "Strength",
    [PW_DEX] = "Dexterity",
    [PW_WEAK] = "Weak",
    [PW_VULN] = "Vulnerable",
    [PW_FRAIL] = "Frail",
    [PW_ARTIFACT] = "Artifact",
    [PW_METALLICIZE] = "Metallicize",
    [PW_PLATED] = "Plated Armor",
    [PW_THORNS] = "Thorns",
    [PW_RITUAL] = "Ritual",
    [PW_INTANGIBLE] = "Intangible",
    [PW_CURL_UP] = "Curl Up",
    [PW_ANGRY] = "Angry",
    [PW_ENRAGE] = "Enrage",
    [PW_SHARP_HIDE] = "Sharp Hide",
    [PW_SPORE_CLOUD] = "Spore Cloud",
    [PW_MODE_SHIFT] = "Mode Shift",
    [PW_SHACKLED] = "Shackled",
    [PW_VIGOR] = "Vigor",
    [PW_ENTANGLED] = "Entangled",
    [PW_NO_DRAW] = "No Draw",
    [PW_BARRICADE] = "Barricade",
    [PW_RAGE] = "Rage",
    [PW_DOUBLE_TAP] = "Double Tap",
    [PW_LOSE_STR] = "Lose Strength",
    [PW_LOSE_DEX] = "Lose Dexterity",
    [PW_DEMON_FORM] = "Demon Form",
    [PW_DARK_EMBRACE] = "Dark Embrace",
    [PW_FNP] = "Feel No Pain",
    [PW_RUPTURE] = "Rupture",
    [PW_COMBUST] = "Combust",
    [PW_COMBUST_HP] = "Combust HP loss",
    [PW_JUGGERNAUT] = "Juggernaut",
    [PW_EVOLVE] = "Evolve",
    [PW_FIRE_BREATHING] = "Fire Breathing",
    [PW_BRUTALITY] = "Brutality",
    [PW_CORRUPTION] = "Corruption",
    [PW_BERSERK] = "Berserk",
    [PW_FLAME_BARRIER] = "Flame Barrier",
    [PW_REGEN] = "Regen",
    [PW_PEN_NIB] = "Pen Nib",
    [PW_DUPLICATION] = "Duplication",
    [PW_NO_BLOCK] = "No Block",
    [PW_MAGNETISM] = "Magnetism",
    [PW_MAYHEM] = "Mayhem",
    [PW_PANACHE] = "Panache",
    [PW_PANACHE_CNT] = "Panache count",
    [PW_SADISTIC] = "Sadistic",
    [PW_BOMB_1] = "The Bomb (1 turn)",
    [PW_BOMB_2] = "The Bomb (2 turns)",
    [PW_BOMB_3] = "The Bomb (3 turns)",
};

void engine_text_put(engine_text *t, const char *fmt, ...) {
    if (t->full || t->len >= t->cap) {
        t->full = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->cap - t->len) {
        t->len = t->cap - 1;
        t->full = 1;
    } else {
        t->len += (size_t)n;
    }
}

int engine_text_result(const engine_text *t) {
    return t->full ? SF_EFULL : (int)t->len;
}

static void put_powers(engine_text *o, const int16_t *pw, int n) {
    for (int i = 0; i < n; i++)
        if (pw[i])
            engine_text_put(o, " %s %d", sf_power_names[i], pw[i]);
}

static void put_pile(engine_text *o, const char *name, const sf_card *pile, int n, int known_top) {
    engine_text_put(o, "%s (%d):", name, n);
    for (int i = 0; i < n; i++)
        engine_text_put(o, " %s%s%s", sf_cards[pile[i].id].name, pile[i].upg ? "+" : "",
                        known_top > 0 && i >= n - known_top ? "*" : "");
    engine_text_put(o, "\n");
}

int sf_engine_render_text(const sf_state *s, char *buf, size_t cap) {
    if (!buf || cap == 0)
        return SF_EFULL;
    const sf_combat *c = ccombat_of(s);
    engine_text o = {buf, cap, 0, 0};
    buf[0] = '\0';
    engine_text_put(&o, "%s  turn %d  %s%s\n", sf_encounters[c->encounter].name, c->turn,
                    c->phase == PH_OVER ? ((c->flags & FL_WON) ? "WON" : "LOST")
                                        : (c->phase == PH_CHOICE ? "CHOICE" : "player"),
                    (c->flags & FL_BELIEF) ? " (belief)" : "");
    engine_text_put(&o, "Player  HP %d/%d  block %d  energy %d", c->hp, c->max_hp, c->block,
                    c->energy);
    put_powers(&o, c->pw, PW_N);
    engine_text_put(&o, "\n");
    for (int m = 0; m < c->n_mon; m++) {
        const sf_monster *mo = &c->mon[m];
        int hits = 0, dmg = monster_intent_damage(c, m, &hits);
        engine_text_put(&o, "[%d] %-16s HP %d/%d  block %d  intent %s", m, sf_monsters[mo->id].name,
                        mo->hp, mo->max_hp, mo->block, sf_moves[mo->move].name);
        if (dmg >= 0)
            engine_text_put(&o, " (%dx%d)", dmg, hits);
        put_powers(&o, mo->pw, PW_MON_N);
        engine_text_put(&o, "%s\n", (mo->flags & MF_DEAD) ? " DEAD" : "");
    }
    put_pile(&o, "Hand", c->hand, c->hand_n, 0);
    engine_text_put(&o, "Draw (%d, %d known on top)  Discard (%d)  Exhaust (%d)\n", c->draw_n,
                    c->draw_known, c->discard_n, c->exhaust_n);
    if (c->relic_n) {
        engine_text_put(&o, "Relics:");
        for (int i = 0; i < c->relic_n; i++)
            engine_text_put(&o, " %s", sf_relics[c->relics[i]].name);
        engine_text_put(&o, "\n");
    }
    engine_text_put(&o, "Potions:");
    for (int i = 0; i < c->potion_slots && i < SF_MAX_POTION_SLOTS; i++)
        engine_text_put(&o, " [%s]", sf_potions[c->potions[i] % POTION_COUNT].name);
    engine_text_put(&o, "\n");
    return engine_text_result(&o);
}
