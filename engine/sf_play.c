/*
 * sf-play — play a fight or an Act-1 gauntlet in the terminal, choosing
 * actions by number, for checking rules by hand; or play N random fights
 * (--random N) as a smoke test of the engine. --json prints the state as a
 * JSON document (engine.h sf_engine_to_json) at every step; --load resumes
 * from such a document.
 *
 * Exit codes: 0 done (or quit), 1 an engine or I/O error, 2 bad arguments or a
 * bad state file.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

enum { EXIT_ENGINE = 1, EXIT_USAGE = 2 };

static void usage(FILE *f) {
    fprintf(f,
            "usage: sf-play [options]                 play one fight interactively\n"
            "       sf-play --gauntlet [options]      play an Act-1 gauntlet (HP carries over)\n"
            "       sf-play --random N [--seed N]     play N random fights over all encounters\n"
            "       sf-play --load FILE               resume from a state saved with --json\n"
            "\n"
            "options:\n"
            "  --seed N          run seed (default 1)\n"
            "  --encounter NAME  an Act-1 encounter, e.g. \"Jaw Worm\", \"3 Sentries\"\n"
            "                    (default Jaw Worm; --list shows them all)\n"
            "  --deck LIST       deck list such as \"Strike*5,Defend*4,Bash+\"\n"
            "                    (\"+\" upgraded, \"*N\" N copies; default the starter deck)\n"
            "  --relics LIST     relic names, comma separated (default Burning Blood)\n"
            "  --potions LIST    up to 3 potion names, comma separated\n"
            "  --hp N            starting HP (default 80 of 80)\n"
            "  --ascension N     0..%d\n"
            "  --json            print the state as one JSON line at every step\n"
            "  --list            list encounters, cards, relics and potions, then exit\n"
            "  --help            this text\n"
            "\n"
            "Interactively, type an action's number; 'q' quits.\n"
            "Exit codes: 0 done, 1 engine or I/O error, 2 bad arguments or state file.\n",
            SF_MAX_ASCENSION);
}

/* Parse a whole decimal number in [lo, hi]; a clear message otherwise. */
static int parse_num(const char *opt, const char *text, long long lo, long long hi,
                     long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end || errno == ERANGE || v < lo || v > hi) {
        fprintf(stderr, "sf-play: %s: '%s' is not a number in %lld..%lld\n", opt, text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_list(const char *opt, const char *text, int (*lookup)(const char *), uint8_t *out,
                      int cap, const char *what) {
    int n = 0;
    char buf[512];
    if (strlen(text) >= sizeof buf) {
        fprintf(stderr, "sf-play: %s: list is too long\n", opt);
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        int id = lookup(tok);
        if (id < 0) {
            fprintf(stderr, "sf-play: %s: unknown %s '%s' (--list shows the names)\n", opt, what,
                    tok);
            return -1;
        }
        if (n >= cap) {
            fprintf(stderr, "sf-play: %s: too many %ss (at most %d)\n", opt, what, cap);
            return -1;
        }
        out[n++] = (uint8_t)id;
    }
    return n;
}

static void list_content(void) {
    static const char *const pools[] = {"weak", "strong", "elite", "boss"};
    printf("encounters:\n");
    for (int i = 0; i < sf_encounter_count(); i++)
        printf("  %-20s %s\n", sf_encounter_name(i), pools[sf_encounter_pool(i)]);
    printf("cards:\n ");
    for (int i = 1; i < sf_card_count(); i++)
        printf(" %s%s", sf_card_name(i), i + 1 < sf_card_count() ? "," : "\n");
    printf("relics:\n ");
    for (int i = 1; i < sf_relic_count(); i++)
        printf(" %s%s", sf_relic_name(i), i + 1 < sf_relic_count() ? "," : "\n");
    printf("potions:\n ");
    for (int i = 1; i < sf_potion_count(); i++)
        printf(" %s%s", sf_potion_name(i), i + 1 < sf_potion_count() ? "," : "\n");
}

/* Print `doc` as one JSON line and release it. */
static int print_json(json_t *doc) {
    if (!doc) {
        fprintf(stderr, "sf-play: out of memory building JSON\n");
        return -1;
    }
    int rc = json_dumpf(doc, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(doc);
    return rc;
}

static int play_random(int fights, uint64_t seed, int json) {
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
            return EXIT_ENGINE;
        }
        for (int step = 0; !sf_engine_is_terminal(&s); step++) {
            sf_action acts[SF_MAX_ACTIONS];
            int n = sf_engine_enumerate(&s, acts, SF_MAX_ACTIONS);
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            sf_action a = acts[(r >> 33) % (uint64_t)n];
            if (json) {
                char name[128];
                sf_engine_action_name(&s, a, name, sizeof name);
                json_t *line = json_object();
                json_object_set_new(line, "fight", json_integer(f));
                json_object_set_new(line, "step", json_integer(step));
                json_object_set_new(line, "state", sf_engine_to_json(&s));
                json_object_set_new(line, "action", json_string(name));
                if (print_json(line) < 0)
                    return EXIT_ENGINE;
            }
            if (sf_engine_apply(&s, a, NULL) < 0) {
                fprintf(stderr, "sf-play: fight %d step %d: the engine refused its own action\n", f,
                        step);
                return EXIT_ENGINE;
            }
        }
        sf_outcome o;
        sf_engine_outcome(&s, &o);
        wins += o.won;
        hp_left += o.won ? o.hp : 0;
    }
    fprintf(json ? stderr : stdout,
            "random play: %d fights over all %d encounters, %d won (%.1f%%), mean HP left on a "
            "win %.1f\n",
            fights, sf_encounter_count(), wins, 100.0 * wins / fights,
            wins ? (double)hp_left / wins : 0.0);
    return 0;
}

static void show(const sf_state *s, int json) {
    if (json) {
        print_json(sf_engine_to_json(s));
        return;
    }
    char text[4096];
    sf_engine_render_text(s, text, sizeof text);
    printf("\n%s", text);
}

/* Play one fight interactively; returns 1 if won, 0 if lost, -1 on quit. */
static int play_fight(sf_state *s, int json) {
    char line[64], name[128];
    /* with --json, stdout holds only the state documents (one per line, so
     * any line of a log loads back with --load); the menu goes to stderr */
    FILE *ui = json ? stderr : stdout;
    while (!sf_engine_is_terminal(s)) {
        show(s, json);
        fflush(stdout);
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
        for (int i = 0; i < n; i++) {
            sf_engine_action_name(s, acts[i], name, sizeof name);
            fprintf(ui, "  %2d) %s\n", i, name);
        }
        fprintf(ui, "> ");
        fflush(ui);
        if (!fgets(line, sizeof line, stdin) || line[0] == 'q')
            return -1;
        char *end;
        long k = strtol(line, &end, 10);
        while (*end == ' ' || *end == '\n' || *end == '\r')
            end++;
        if (end == line || *end || k < 0 || k >= n) {
            fprintf(ui, "pick a number from 0 to %d, or q to quit\n", n - 1);
            continue;
        }
        sf_engine_apply(s, acts[k], NULL);
    }
    show(s, json);
    sf_outcome o;
    sf_engine_outcome(s, &o);
    fprintf(ui, "%s with %d/%d HP after %d turns\n", o.won ? "Won" : "Lost", o.hp, o.max_hp,
            o.turns);
    return o.won;
}

static int load_state(const char *path, sf_state *s) {
    sf_err err = {0};
    if (sf_engine_load_file(path, s, &err) < 0) {
        fprintf(stderr, "sf-play: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    uint64_t seed = 1;
    long long v;
    int random_n = 0, gauntlet = 0, json = 0;
    const char *load = NULL;
    static const struct option opts[] = {{"seed", required_argument, 0, 's'},
                                         {"encounter", required_argument, 0, 'e'},
                                         {"deck", required_argument, 0, 'd'},
                                         {"relics", required_argument, 0, 'r'},
                                         {"potions", required_argument, 0, 'p'},
                                         {"hp", required_argument, 0, 'H'},
                                         {"ascension", required_argument, 0, 'a'},
                                         {"gauntlet", no_argument, 0, 'g'},
                                         {"random", required_argument, 0, 'R'},
                                         {"json", no_argument, 0, 'j'},
                                         {"load", required_argument, 0, 'l'},
                                         {"list", no_argument, 0, 'L'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    sf_err err = {0};
    /* the first flag that sets up a fight, and whether --seed or
     * --encounter were given: a mode that does not use them refuses them */
    const char *fight_flag = NULL;
    int seed_given = 0, encounter_given = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":s:e:d:r:p:H:a:gR:jl:Lh", opts, NULL)) != -1) {
        if (strchr("edrpHa", ch) && !fight_flag) {
            for (int k = 0; opts[k].name; k++)
                if (opts[k].val == ch)
                    fight_flag = opts[k].name;
        }
        seed_given |= ch == 's';
        encounter_given |= ch == 'e';
        switch (ch) {
        case 's':
            /* strtoll cannot hold every u64; seeds above 2^63-1 are rare in
             * hand play and refused with a clear message. */
            if (parse_num("--seed", optarg, 0, INT64_MAX, &v) < 0)
                return EXIT_USAGE;
            seed = (uint64_t)v;
            break;
        case 'e':
            spec.encounter = sf_encounter_lookup(optarg);
            if (spec.encounter < 0) {
                fprintf(stderr,
                        "sf-play: --encounter: unknown encounter '%s' (--list shows them)\n",
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 'd':
            if (sf_deck_parse(optarg, &spec, &err) < 0) {
                fprintf(stderr, "sf-play: --deck: %s\n", err.msg);
                return EXIT_USAGE;
            }
            break;
        case 'r': {
            int n = parse_list("--relics", optarg, sf_relic_lookup, spec.relics, SF_MAX_RELICS,
                               "relic");
            if (n < 0)
                return EXIT_USAGE;
            spec.relics_n = n;
            break;
        }
        case 'p':
            memset(spec.potions, 0, sizeof spec.potions);
            if (parse_list("--potions", optarg, sf_potion_lookup, spec.potions, SF_POTION_SLOTS,
                           "potion") < 0)
                return EXIT_USAGE;
            break;
        case 'H':
            if (parse_num("--hp", optarg, 1, 999, &v) < 0)
                return EXIT_USAGE;
            spec.hp = (int)v;
            if (spec.hp > spec.max_hp)
                spec.max_hp = spec.hp;
            break;
        case 'a':
            if (parse_num("--ascension", optarg, 0, SF_MAX_ASCENSION, &v) < 0)
                return EXIT_USAGE;
            spec.ascension = (int)v;
            break;
        case 'g': gauntlet = 1; break;
        case 'R':
            if (parse_num("--random", optarg, 1, 1000000000, &v) < 0)
                return EXIT_USAGE;
            random_n = (int)v;
            break;
        case 'j': json = 1; break;
        case 'l': load = optarg; break;
        case 'L': list_content(); return 0;
        case 'h': usage(stdout); return 0;
        case ':':
            fprintf(stderr, "sf-play: %s needs a value (--help for usage)\n", argv[optind - 1]);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "sf-play: unknown option '%s' (--help for usage)\n", argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sf-play: unexpected argument '%s' (--help for usage)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if ((random_n > 0) + gauntlet + (load != NULL) > 1) {
        fprintf(stderr, "sf-play: --random, --gauntlet and --load exclude each other\n");
        return EXIT_USAGE;
    }
    if (load && (fight_flag || seed_given)) {
        fprintf(stderr,
                "sf-play: --%s has no effect with --load (the state file fixes the fight)\n",
                fight_flag ? fight_flag : "seed");
        return EXIT_USAGE;
    }
    if (random_n > 0 && fight_flag) {
        fprintf(stderr,
                "sf-play: --%s has no effect with --random (it plays the starter deck through "
                "every encounter)\n",
                fight_flag);
        return EXIT_USAGE;
    }
    if (gauntlet && encounter_given) {
        fprintf(stderr, "sf-play: --encounter has no effect with --gauntlet (the seed draws "
                        "the gauntlet's fights)\n");
        return EXIT_USAGE;
    }
    if (random_n > 0)
        return play_random(random_n, seed, json);
    sf_state s;
    if (load) {
        if (load_state(load, &s) < 0)
            return EXIT_USAGE; /* a bad input file, like a bad argument */
        play_fight(&s, json);
        return 0;
    }
    spec.seed = seed;
    if (!gauntlet) {
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "sf-play: %s\n", err.msg);
            return EXIT_USAGE;
        }
        play_fight(&s, json);
        return 0;
    }
    sf_gauntlet g;
    sf_gauntlet_generate(seed, &g);
    for (int i = 0; i < g.n; i++) {
        spec.encounter = g.encounters[i];
        spec.floor = i + 1;
        printf("\n=== Fight %d of %d: %s ===\n", i + 1, g.n, sf_encounter_name(g.encounters[i]));
        if (sf_engine_init(&s, &spec, &err) < 0) {
            fprintf(stderr, "sf-play: fight %d: %s\n", i + 1, err.msg);
            return EXIT_USAGE;
        }
        int r = play_fight(&s, json);
        if (r <= 0)
            break;
        sf_engine_carry_over(&s, &g, i + 1, &spec);
    }
    return 0;
}
