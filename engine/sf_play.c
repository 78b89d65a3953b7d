/*
 * sf-play — play a fight or an Act-1 gauntlet in the terminal, choosing
 * actions by number, for checking rules by hand; or play N random fights
 * (--random N) as a smoke test of the engine. --json prints the state as a
 * JSON document (engine.h sf_engine_to_json) at every step; --load resumes
 * from such a document. --start rewards plays the fight from a start drawn
 * by an Act-1 run prefix (engine.h sf_start_sample); --starts N prints the
 * distribution of N such starts per encounter class.
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
            "       sf-play --starts N [--picker P]   statistics of N rewards starts per class\n"
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
            "  --max-turns N     the turn cap: a fight still going after N turns ends as a\n"
            "                    turn-limit loss (default %d, at most %d)\n"
            "  --start S         starter | rewards: rewards plays an Act-1 run prefix by the\n"
            "                    game's reward rules first (docs/starts.md); run seed and\n"
            "                    game seed are --seed\n"
            "  --picker P        random | greedy (default): who takes the prefix's rewards\n"
            "  --json            print the state as one JSON line at every step\n"
            "  --list            list encounters, cards, relics and potions, then exit\n"
            "  --help            this text\n"
            "\n"
            "Interactively, type an action's number; 'q' quits.\n"
            "Exit codes: 0 done, 1 engine or I/O error, 2 bad arguments or state file.\n",
            SF_MAX_ASCENSION, SF_MAX_TURNS_DEFAULT, SF_MAX_TURNS_LIMIT);
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

static int play_random(int fights, uint64_t seed, int max_turns, int json) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    spec.max_turns = max_turns;
    int wins = 0, capped = 0;
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
        capped += o.turn_limit;
        hp_left += o.won ? o.hp : 0;
    }
    fprintf(json ? stderr : stdout,
            "random play: %d fights over all %d encounters, %d won (%.1f%%), mean HP left on a "
            "win %.1f",
            fights, sf_encounter_count(), wins, 100.0 * wins / fights,
            wins ? (double)hp_left / wins : 0.0);
    if (capped)
        fprintf(json ? stderr : stdout, ", %d ended at the turn cap (%d turns)", capped,
                spec.max_turns);
    fprintf(json ? stderr : stdout, "\n");
    return 0;
}

/* --starts N: the distribution of rewards starts, per encounter class
 * (or for --encounter's class only). */
static int start_stats(int n, uint64_t seed, const sf_start_opts *opts, int only_class) {
    static const char *const classes[] = {"weak", "strong", "elite", "boss"};
    for (int cls = 0; cls < 4; cls++) {
        if (only_class >= 0 && cls != only_class)
            continue;
        int cards[128] = {0}, relics[128] = {0}, potions[64] = {0},
            deck_hist[SF_MAX_DECK + 1] = {0};
        int floors[17] = {0};
        double deck = 0, hp = 0, max_hp = 0, gold = 0, nrel = 0, npot = 0, attempts = 0, upg = 0;
        double died = 0, mrel = 0, mpot = 0, added[4] = {0};
        /* the path before the fight: fights, elites, cards taken and
         * skipped, rests, smiths, removals */
        double prefix[7] = {0};
        uint64_t t0 = sf_now_ns();
        for (int i = 0; i < n; i++) {
            sf_fight_spec spec;
            sf_start_desc d;
            sf_err err = {0};
            if (sf_start_sample(opts, seed, (uint64_t)i, SF_START_CLASS(cls), &spec, &d, &err) <
                0) {
                fprintf(stderr, "sf-play: %s start %d: %s\n", classes[cls], i, err.msg);
                return EXIT_ENGINE;
            }
            deck += spec.deck_n;
            deck_hist[spec.deck_n]++;
            floors[spec.floor]++;
            hp += spec.hp;
            max_hp += spec.max_hp;
            gold += spec.gold;
            nrel += d.relics_n;
            attempts += d.attempts;
            died += d.died;
            const int path[7] = {d.fights, d.elites, d.cards_taken, d.cards_skipped,
                                 d.rests,  d.smiths, d.removals};
            for (int k = 0; k < 7; k++)
                prefix[k] += path[k];
            for (int k = 0; k < spec.deck_n; k++) {
                cards[spec.deck[k].id]++;
                upg += spec.deck[k].upgrades > 0;
            }
            mrel += spec.relics_n;
            for (int k = 0; k < SF_MAX_POTION_SLOTS; k++)
                mpot += spec.potions[k] != 0;
            for (int k = 0; k < d.relics_n; k++)
                relics[d.relics[k]]++;
            for (int k = 0; k < SF_MAX_POTION_SLOTS; k++)
                if (d.potions[k]) {
                    potions[d.potions[k]]++;
                    npot++;
                }
        }
        double ms = (double)(sf_now_ns() - t0) * 1e-6 / n;
        printf("%s: %d starts, %.2f ms each, %.2f runs drawn per start (%.2f died before the "
               "fight)\n",
               classes[cls], n, ms, attempts / n, died / n);
        printf("  floor");
        for (int f = 0; f <= 16; f++)
            if (floors[f])
                printf(" %d:%d", f, floors[f]);
        printf(
            "\n  prefix: %.2f fights (%.2f elites), cards taken %.2f / skipped %.2f, rests %.2f, "
            "smiths %.2f, removals %.2f\n",
            prefix[0] / n, prefix[1] / n, prefix[2] / n, prefix[3] / n, prefix[4] / n,
            prefix[5] / n, prefix[6] / n);
        printf("  deck %.2f cards (%.2f upgraded), HP %.1f/%.1f, gold %.0f, relics %.2f (%.2f "
               "act in a fight), potions %.2f (%.2f modelled)\n  deck sizes",
               deck / n, upg / n, hp / n, max_hp / n, gold / n, nrel / n, mrel / n, npot / n,
               mpot / n);
        for (int k = 0; k <= SF_MAX_DECK; k++)
            if (deck_hist[k])
                printf(" %d:%d", k, deck_hist[k]);
        for (int id = 1; id < sf_card_count() && id < 128; id++)
            if (cards[id] && sf_card_rarity(id) >= 1 && sf_card_rarity(id) <= 3)
                added[sf_card_rarity(id)] += cards[id];
        printf("\n  cards beyond the starter: %.2f common, %.2f uncommon, %.2f rare", added[1] / n,
               added[2] / n, added[3] / n);
        printf("\n  cards per start:");
        for (int id = 1; id < sf_card_count() && id < 128; id++)
            if (cards[id])
                printf(" %s %.2f;", sf_card_name(id), (double)cards[id] / n);
        int marked = 0; /* items held whose rules nothing plays */
        printf("\n  relics per start:");
        for (int r = 1; r < sf_run_relic_count(); r++)
            if (relics[r]) {
                marked += !sf_run_relic_modelled(r);
                printf(" %s%s %.3f;", sf_run_relic_name(r), sf_run_relic_modelled(r) ? "" : "*",
                       (double)relics[r] / n);
            }
        printf("\n  potions per start:");
        for (int p = 1; p < sf_run_potion_count(); p++)
            if (potions[p]) {
                marked += sf_run_potion_engine(p) <= 0;
                printf(" %s%s %.3f;", sf_run_potion_name(p), sf_run_potion_engine(p) > 0 ? "" : "*",
                       (double)potions[p] / n);
            }
        printf("\n%s", marked ? "  (* not modelled: held, no effect)\n" : "");
    }
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
    fprintf(ui, "%s with %d/%d HP after %d turns%s\n", o.won ? "Won" : "Lost", o.hp, o.max_hp,
            o.turns,
            o.turn_limit     ? " (the turn cap: --max-turns)"
            : o.engine_limit ? " (a card pile overflowed the engine's capacity)"
                             : "");
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
    int random_n = 0, gauntlet = 0, json = 0, starts_n = 0, picker_given = 0;
    sf_start_opts start;
    sf_start_opts_default(&start);
    const char *load = NULL;
    static const struct option opts[] = {{"seed", required_argument, 0, 's'},
                                         {"encounter", required_argument, 0, 'e'},
                                         {"deck", required_argument, 0, 'd'},
                                         {"relics", required_argument, 0, 'r'},
                                         {"potions", required_argument, 0, 'p'},
                                         {"hp", required_argument, 0, 'H'},
                                         {"ascension", required_argument, 0, 'a'},
                                         {"max-turns", required_argument, 0, 'T'},
                                         {"gauntlet", no_argument, 0, 'g'},
                                         {"random", required_argument, 0, 'R'},
                                         {"json", no_argument, 0, 'j'},
                                         {"load", required_argument, 0, 'l'},
                                         {"start", required_argument, 0, 'S'},
                                         {"picker", required_argument, 0, 'P'},
                                         {"starts", required_argument, 0, 'N'},
                                         {"list", no_argument, 0, 'L'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch;
    sf_err err = {0};
    /* the first flag that sets up a fight, and whether --seed or
     * --encounter were given: a mode that does not use them refuses them */
    const char *fight_flag = NULL;
    const char *random_flag = NULL; /* the first one random play has no use for */
    const char *deck_flag = NULL; /* the first flag setting the player (--start rewards draws it) */
    int seed_given = 0, encounter_given = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":s:e:d:r:p:H:a:T:gR:jl:S:P:N:Lh", opts, NULL)) != -1) {
        if (strchr("drpH", ch) && !deck_flag)
            for (int k = 0; opts[k].name; k++)
                if (opts[k].val == ch)
                    deck_flag = opts[k].name;
        if (strchr("edrpHa", ch) && !random_flag)
            for (int k = 0; opts[k].name; k++)
                if (opts[k].val == ch)
                    random_flag = opts[k].name;
        if (strchr("edrpHaT", ch) && !fight_flag) {
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
        case 'r':
        case 'p':
            if ((ch == 'r' ? sf_relics_parse : sf_potions_parse)(optarg, &spec, &err) < 0) {
                fprintf(stderr, "sf-play: --%s: %s\n", ch == 'r' ? "relics" : "potions", err.msg);
                return EXIT_USAGE;
            }
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
        case 'T':
            if (parse_num("--max-turns", optarg, 1, SF_MAX_TURNS_LIMIT, &v) < 0)
                return EXIT_USAGE;
            spec.max_turns = (int)v;
            break;
        case 'g': gauntlet = 1; break;
        case 'R':
            if (parse_num("--random", optarg, 1, 1000000000, &v) < 0)
                return EXIT_USAGE;
            random_n = (int)v;
            break;
        case 'j': json = 1; break;
        case 'S':
            start.start = sf_start_kind_lookup(optarg);
            if (start.start < 0) {
                fprintf(stderr, "sf-play: --start: expected starter or rewards, got '%s'\n",
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 'P':
            picker_given = 1;
            start.picker = sf_picker_lookup(optarg);
            if (start.picker < 0 || start.picker == SF_PICK_CALLBACK) {
                fprintf(stderr, "sf-play: --picker: expected random or greedy, got '%s'\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'N':
            if (parse_num("--starts", optarg, 1, 10000000, &v) < 0)
                return EXIT_USAGE;
            starts_n = (int)v;
            break;
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
    if ((random_n > 0) + gauntlet + (load != NULL) + (starts_n > 0) > 1) {
        fprintf(stderr, "sf-play: --random, --gauntlet, --load and --starts exclude each other\n");
        return EXIT_USAGE;
    }
    if (starts_n > 0)
        start.start = SF_START_REWARDS;
    if (start.start == SF_START_REWARDS && deck_flag) {
        fprintf(stderr,
                "sf-play: --%s has no effect with --start rewards (the run prefix draws the deck, "
                "relics, potions and HP)\n",
                deck_flag);
        return EXIT_USAGE;
    }
    if (start.start == SF_START_REWARDS && (gauntlet || random_n > 0 || load)) {
        fprintf(stderr, "sf-play: --start rewards goes with one fight or --starts, not with "
                        "--gauntlet, --random or --load\n");
        return EXIT_USAGE;
    }
    if (picker_given && start.start != SF_START_REWARDS) {
        fprintf(stderr, "sf-play: --picker needs --start rewards\n");
        return EXIT_USAGE;
    }
    start.ascension = spec.ascension;
    if (starts_n > 0)
        return start_stats(starts_n, seed, &start,
                           encounter_given ? sf_encounter_pool(spec.encounter) : -1);
    if (load && (fight_flag || seed_given)) {
        fprintf(stderr,
                "sf-play: --%s has no effect with --load (the state file fixes the fight)\n",
                fight_flag ? fight_flag : "seed");
        return EXIT_USAGE;
    }
    if (random_n > 0 && random_flag) {
        fprintf(stderr,
                "sf-play: --%s has no effect with --random (it plays the starter deck through "
                "every encounter)\n",
                random_flag);
        return EXIT_USAGE;
    }
    if (gauntlet && encounter_given) {
        fprintf(stderr, "sf-play: --encounter has no effect with --gauntlet (the seed draws "
                        "the gauntlet's fights)\n");
        return EXIT_USAGE;
    }
    if (random_n > 0)
        return play_random(random_n, seed, spec.max_turns, json);
    sf_state s;
    if (load) {
        if (load_state(load, &s) < 0)
            return EXIT_USAGE; /* a bad input file, like a bad argument */
        play_fight(&s, json);
        return 0;
    }
    if (start.start == SF_START_REWARDS) {
        sf_start_desc d;
        int max_turns = spec.max_turns;
        if (sf_start_sample(&start, seed, seed, spec.encounter, &spec, &d, &err) < 0) {
            fprintf(stderr, "sf-play: %s\n", err.msg);
            return EXIT_ENGINE;
        }
        spec.max_turns = max_turns;
        fprintf(json ? stderr : stdout, "Start (floor %d, rooms %s): %s\n", d.floor, d.path,
                d.text);
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
