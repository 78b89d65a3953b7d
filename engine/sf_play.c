/*
 * sf-play — play a fight or an Act-1 gauntlet in the terminal, choosing
 * actions by number, for checking rules by hand; or play N random fights
 * (--random N) as a smoke test of the engine.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

static void usage(FILE *f) {
    fprintf(f, "usage: sf-play [--seed N] [--encounter NAME | --gauntlet] [--deck LIST]\n"
               "               [--relics LIST] [--potions LIST] [--hp N] [--ascension N]\n"
               "       sf-play --random N [--seed N]\n"
               "Choose actions by number; 'q' quits. Deck lists look like\n"
               "\"Strike*5,Defend*4,Bash+\". Exit codes: 0 ok, 2 bad arguments.\n");
}

static int parse_list(const char *text, int (*lookup)(const char *), uint8_t *out, int cap,
                      const char *what) {
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        while (*tok == ' ')
            tok++;
        int id = lookup(tok);
        if (id < 0) {
            fprintf(stderr, "sf-play: unknown %s '%s'\n", what, tok);
            return -1;
        }
        if (n >= cap) {
            fprintf(stderr, "sf-play: too many %ss (at most %d)\n", what, cap);
            return -1;
        }
        out[n++] = (uint8_t)id;
    }
    return n;
}

static int play_random(int fights, uint64_t seed) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    int wins = 0;
    long hp_left = 0;
    uint64_t r = seed * 2862933555777941757ull + 3037000493ull;
    for (int f = 0; f < fights; f++) {
        spec.encounter = f % sf_encounter_count();
        spec.seed = seed + (uint64_t)f;
        sf_state s;
        sf_err err = {0};
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "sf-play: %s\n", err.msg);
            return 1;
        }
        while (!sf_engine_is_terminal(&s)) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            sf_engine_apply(&s, acts[(r >> 33) % (uint64_t)n], NULL);
        }
        sf_outcome o;
        sf_engine_outcome(&s, &o);
        wins += o.won;
        hp_left += o.won ? o.hp : 0;
    }
    printf("random play: %d fights over all %d encounters, %d won (%.1f%%), mean HP left on a "
           "win %.1f\n",
           fights, sf_encounter_count(), wins, 100.0 * wins / fights,
           wins ? (double)hp_left / wins : 0.0);
    return 0;
}

/* Play one fight interactively; returns 1 if won, 0 if lost, -1 on quit. */
static int play_fight(sf_state *s) {
    char text[4096], line[64], name[128];
    while (!sf_engine_is_terminal(s)) {
        sf_engine_render_text(s, text, sizeof text);
        printf("\n%s", text);
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
        for (int i = 0; i < n; i++) {
            sf_engine_action_name(s, acts[i], name, sizeof name);
            printf("  %2d) %s\n", i, name);
        }
        printf("> ");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin) || line[0] == 'q')
            return -1;
        char *end;
        long k = strtol(line, &end, 10);
        if (end == line || k < 0 || k >= n) {
            printf("pick a number from 0 to %d\n", n - 1);
            continue;
        }
        uint32_t streams = 0;
        sf_engine_apply(s, acts[k], &streams);
    }
    sf_engine_render_text(s, text, sizeof text);
    printf("\n%s", text);
    sf_outcome o;
    sf_engine_outcome(s, &o);
    printf("%s with %d/%d HP after %d turns\n", o.won ? "Won" : "Lost", o.hp, o.max_hp, o.turns);
    return o.won;
}

int main(int argc, char **argv) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    uint64_t seed = 1;
    int random_n = 0, gauntlet = 0;
    static const struct option opts[] = {{"seed", required_argument, 0, 's'},
                                         {"encounter", required_argument, 0, 'e'},
                                         {"deck", required_argument, 0, 'd'},
                                         {"relics", required_argument, 0, 'r'},
                                         {"potions", required_argument, 0, 'p'},
                                         {"hp", required_argument, 0, 'H'},
                                         {"ascension", required_argument, 0, 'a'},
                                         {"gauntlet", no_argument, 0, 'g'},
                                         {"random", required_argument, 0, 'R'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    sf_err err = {0};
    while ((ch = getopt_long(argc, argv, "s:e:d:r:p:H:a:gR:h", opts, NULL)) != -1) {
        switch (ch) {
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'e':
            spec.encounter = sf_encounter_lookup(optarg);
            if (spec.encounter < 0) {
                fprintf(stderr, "sf-play: unknown encounter '%s'\n", optarg);
                return 2;
            }
            break;
        case 'd':
            if (sf_deck_parse(optarg, &spec, &err) < 0) {
                fprintf(stderr, "sf-play: %s\n", err.msg);
                return 2;
            }
            break;
        case 'r': {
            int n = parse_list(optarg, sf_relic_lookup, spec.relics, SF_MAX_RELICS, "relic");
            if (n < 0)
                return 2;
            spec.relics_n = n;
            break;
        }
        case 'p':
            if (parse_list(optarg, sf_potion_lookup, spec.potions, SF_POTION_SLOTS, "potion") < 0)
                return 2;
            break;
        case 'H': spec.hp = atoi(optarg); break;
        case 'a': spec.ascension = atoi(optarg); break;
        case 'g': gauntlet = 1; break;
        case 'R': random_n = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (random_n > 0)
        return play_random(random_n, seed);
    spec.seed = seed;
    sf_state s;
    if (!gauntlet) {
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "sf-play: %s\n", err.msg);
            return 2;
        }
        return play_fight(&s) < 0 ? 0 : 0;
    }
    sf_gauntlet g;
    sf_gauntlet_generate(seed, &g);
    for (int i = 0; i < g.n; i++) {
        spec.encounter = g.encounters[i];
        spec.floor = i + 1;
        printf("\n=== Fight %d of %d: %s ===\n", i + 1, g.n, sf_encounter_name(g.encounters[i]));
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "sf-play: %s\n", err.msg);
            return 2;
        }
        int r = play_fight(&s);
        if (r <= 0)
            break;
        sf_engine_carry_over(&s, &g, i + 1, &spec);
    }
    return 0;
}
