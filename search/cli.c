/* cli.c — flag parsing shared by sf-search and sf-arena (see cli.h). */
#include "search/cli.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/search_defaults.h"

/* The defaults the usage text names, spelled from their one home. */
#define D(knob) SF_STRINGIFY(SF_SEARCH_DEFAULT_##knob)

/* clang-format off */
const char sf_cli_search_usage[] =
    "search flags:\n"
    "  --sims N            simulations per decision, all trees (default " D(SIMULATIONS) ")\n"
    "  --trees K           root-parallel trees (default " D(TREES) ")\n"
    "  --select RULE       auto | uct | puct | gumbel (default auto)\n"
    "  --eval E            rollout | uniform | net (default rollout)\n"
    "  --model PATH[@SHA256]  the network for --eval net and --policy net (a bundle,\n"
    "                      evaluated in-process on the cpu backend; with --evald a\n"
    "                      bare SHA-256 names a model the server has)\n"
    "  --evald ENDPOINT    evaluate on a running gpu-evald instead\n"
    "  --leaf-mix L        with --eval net: a leaf's value is (1-L)*network +\n"
    "                      L*rollout, the network's priors kept (default " D(LEAF_MIX) ")\n"
    "  --uct-c C           UCT constant (default: " D(UCT_C_LOW) " <" D(UCT_BUDGET_MID) " sims, " D(UCT_C_MID) " <" D(UCT_BUDGET_HIGH) ", " D(UCT_C_HIGH) ")\n"
    "  --puct-c C          PUCT's c1, the prior term's weight (default " D(PUCT_C1) ")\n"
    "  --fpu R             PUCT first-play urgency reduction: unvisited children\n"
    "                      score parent Q - R*sqrt(visited prior mass) (default " D(PUCT_FPU_REDUCTION) ")\n"
    "  --gumbel-m M        Gumbel considered actions (default " D(GUMBEL_M) ")\n"
    "  --c-scale C         Gumbel sigma scale (default " D(GUMBEL_C_SCALE) ")\n"
    "  --rescale           Gumbel per-node min-max Q rescaling (use --c-scale 0.1)\n"
    "  --distributional    keep 21-bin value histograms\n"
    "  --cvar-alpha A      CVaR level (default " D(CVAR_ALPHA) ")\n"
    "  --cvar-lambda L     root ranking (1-L)*mean + L*CVaR (needs --distributional)\n"
    "  --horizon T         leaves at T turns past the root (default 0 = none)\n"
    "  --pw-c C --pw-alpha A          widening of non-end-turn chance nodes\n"
    "  --pw-end-c C --pw-end-alpha A  widening at END_TURN (" D(WIDENING_C) ", " D(WIDENING_ALPHA) ")\n"
    "  --margin M          choice margin (default " D(CHOOSE_MARGIN) ")\n"
    "  --no-guards         no end-turn guards\n"
    "  --no-transposition-stop  always descend through transpositions\n"
    "  --clairvoyant       search the true state and streams (measuring only)\n";
/* clang-format on */
#undef D

const char sf_cli_fight_usage[] =
    "fight flags:\n"
    "  --deck LIST         e.g. \"Strike*5,Defend*4,Bash\" (default: Ironclad start)\n"
    "  --relics LIST       e.g. \"Burning Blood,Vajra\"\n"
    "  --potions LIST      e.g. \"Fire Potion,Block Potion\"\n"
    "  --hp N --max-hp N   player HP (default 80/80; --hp above the maximum raises it,\n"
    "                      --max-hp below the HP caps it)\n"
    "  --ascension N       0..9\n"
    "  --max-turns N       the turn cap: a fight still going after N turns ends as a\n"
    "                      turn-limit loss (default " SF_STRINGIFY(
        SF_MAX_TURNS_DEFAULT) ", at most " SF_STRINGIFY(SF_MAX_TURNS_LIMIT) ")\n";

int sf_cli_list(const char *prog, const char *flag, const char *list, size_t cap) {
    size_t len = strlen(list);
    if (len == 0 || list[0] == ',' || list[len - 1] == ',' || strstr(list, ",,")) {
        fprintf(stderr, "%s: --%s '%s': an empty element in the list\n", prog, flag, list);
        return SF_EINVAL;
    }
    if (len >= cap) {
        fprintf(stderr, "%s: --%s: the list is longer than %zu characters\n", prog, flag, cap - 1);
        return SF_EINVAL;
    }
    return SF_OK;
}

int sf_cli_int(const char *prog, const char *flag, const char *text, long lo, long hi, long *out) {
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "%s: --%s: expected an integer in %ld..%ld, got '%s'\n", prog, flag, lo, hi,
                text ? text : "");
        return SF_EINVAL;
    }
    *out = v;
    return SF_OK;
}

int sf_cli_u64(const char *prog, const char *flag, const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = text ? strtoull(text, &end, 0) : 0;
    if (!text || end == text || *end || errno || text[0] == '-') {
        fprintf(stderr, "%s: --%s: expected an unsigned integer, got '%s'\n", prog, flag,
                text ? text : "");
        return SF_EINVAL;
    }
    *out = v;
    return SF_OK;
}

int sf_cli_double(const char *prog, const char *flag, const char *text, double lo, double hi,
                  double *out) {
    char *end = NULL;
    errno = 0;
    double v = text ? strtod(text, &end) : 0.0;
    if (!text || end == text || *end || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "%s: --%s: expected a number in [%g, %g], got '%s'\n", prog, flag, lo, hi,
                text ? text : "");
        return SF_EINVAL;
    }
    *out = v;
    return SF_OK;
}

static int is(const char *a, const char *b) {
    return strcmp(a, b) == 0;
}

/* The search flags that take a number: the field each sets (an int or a
 * double member of sf_search_config) and the range its value must lie in. */
typedef struct number_flag {
    const char *name;
    size_t field;
    int is_int;
    double lo, hi;
} number_flag;

#define INT_FLAG(name, m, lo, hi) \
    { name, offsetof(sf_search_config, m), 1, lo, hi }
#define DOUBLE_FLAG(name, m, lo, hi) \
    { name, offsetof(sf_search_config, m), 0, lo, hi }
static const number_flag number_flags[] = {
    INT_FLAG("sims", simulations, 1, 50000000),
    INT_FLAG("trees", trees, 1, SF_SEARCH_MAX_TREES),
    DOUBLE_FLAG("uct-c", uct_c, 0.0, 100.0),
    DOUBLE_FLAG("puct-c", puct_c1, 0.0, 100.0),
    DOUBLE_FLAG("fpu", puct_fpu_reduction, 0.0, 1.0),
    INT_FLAG("gumbel-m", gumbel_m, 2, SF_MAX_ACTIONS),
    DOUBLE_FLAG("c-scale", gumbel_c_scale, 0.0, 1000.0),
    DOUBLE_FLAG("cvar-alpha", cvar_alpha, 1e-6, 1.0),
    DOUBLE_FLAG("cvar-lambda", cvar_lambda, 0.0, 1.0),
    DOUBLE_FLAG("leaf-mix", leaf_mix, 0.0, 1.0),
    INT_FLAG("horizon", horizon_turns, 0, 1000),
    DOUBLE_FLAG("pw-c", pw_other_c, 1.0, 1e6),
    DOUBLE_FLAG("pw-end-c", pw_end_turn_c, 1.0, 1e6),
    DOUBLE_FLAG("pw-alpha", pw_other_alpha, 0.0, 1.0),
    DOUBLE_FLAG("pw-end-alpha", pw_end_turn_alpha, 0.0, 1.0),
    DOUBLE_FLAG("margin", choose_margin, 0.0, 1.0),
};
#undef INT_FLAG
#undef DOUBLE_FLAG

/* The search flags that take no value: the int field each sets, and to
 * what. */
typedef struct switch_flag {
    const char *name;
    size_t field;
    int value;
} switch_flag;

static const switch_flag switch_flags[] = {
    {"rescale", offsetof(sf_search_config, gumbel_rescale), 1},
    {"distributional", offsetof(sf_search_config, distributional), 1},
    {"no-guards", offsetof(sf_search_config, end_turn_guards), 0},
    {"no-transposition-stop", offsetof(sf_search_config, stop_at_transposition), 0},
    {"clairvoyant", offsetof(sf_search_config, root), SF_ROOT_CLAIRVOYANT},
};

/* --select and --eval: a name among `names`, stored as its index's code. */
static int choice_flag(const char *prog, const char *flag, const char *value,
                       const char *const *names, const int *codes, int n, const char *expected,
                       int *out) {
    for (int i = 0; i < n; i++)
        if (value && is(value, names[i])) {
            *out = codes[i];
            return 1;
        }
    fprintf(stderr, "%s: --%s: expected %s, got '%s'\n", prog, flag, expected, value ? value : "");
    return SF_EINVAL;
}

int sf_cli_search_flag(const char *prog, const char *name, const char *value, sf_search_config *c) {
    char *base = (char *)c;
    for (size_t i = 0; i < sizeof number_flags / sizeof number_flags[0]; i++) {
        const number_flag *f = &number_flags[i];
        if (!is(name, f->name))
            continue;
        if (f->is_int) {
            long v;
            if (sf_cli_int(prog, name, value, (long)f->lo, (long)f->hi, &v) < 0)
                return SF_EINVAL;
            *(int *)(void *)(base + f->field) = (int)v;
        } else {
            double d;
            if (sf_cli_double(prog, name, value, f->lo, f->hi, &d) < 0)
                return SF_EINVAL;
            *(double *)(void *)(base + f->field) = d;
        }
        return 1;
    }
    for (size_t i = 0; i < sizeof switch_flags / sizeof switch_flags[0]; i++)
        if (is(name, switch_flags[i].name)) {
            *(int *)(void *)(base + switch_flags[i].field) = switch_flags[i].value;
            return 1;
        }
    if (is(name, "select")) {
        int k = sf_search_select_lookup(value);
        if (k < 0) {
            fprintf(stderr, "%s: --select: expected auto, uct, puct or gumbel, got '%s'\n", prog,
                    value ? value : "");
            return SF_EINVAL;
        }
        c->select = k;
        return 1;
    }
    if (is(name, "eval")) {
        /* net: the tool brings the model (--model) */
        static const char *const names[] = {"rollout", "uniform", "net"};
        static const int codes[] = {SF_EVAL_ROLLOUT, SF_EVAL_UNIFORM, SF_EVAL_EXTERNAL};
        return choice_flag(prog, name, value, names, codes, 3, "rollout, uniform or net",
                           &c->evaluator);
    }
    return 0;
}

int sf_cli_is_player_flag(const char *name) {
    return is(name, "deck") || is(name, "relics") || is(name, "potions") || is(name, "hp") ||
           is(name, "max-hp");
}

int sf_cli_fight_flag(const char *prog, const char *name, const char *value, sf_fight_spec *spec) {
    long v;
    if (is(name, "deck")) {
        sf_err e = {0};
        if (!value || sf_deck_parse(value, spec, &e) < 0) {
            fprintf(stderr, "%s: --deck: %s\n", prog, value ? e.msg : "missing");
            return SF_EINVAL;
        }
    } else if (is(name, "relics") || is(name, "potions")) {
        sf_err e = {0};
        int rc = is(name, "relics") ? sf_relics_parse(value, spec, &e)
                                    : sf_potions_parse(value, spec, &e);
        if (rc < 0) {
            fprintf(stderr, "%s: --%s: %s\n", prog, name, e.msg);
            return SF_EINVAL;
        }
    } else if (is(name, "hp")) {
        if (sf_cli_int(prog, name, value, 1, 999, &v) < 0)
            return SF_EINVAL;
        spec->hp = (int)v;
        if (spec->max_hp < spec->hp) /* as sf-play: HP above the maximum raises it */
            spec->max_hp = spec->hp;
    } else if (is(name, "max-hp")) {
        if (sf_cli_int(prog, name, value, 1, 999, &v) < 0)
            return SF_EINVAL;
        spec->max_hp = (int)v;
        if (spec->hp > spec->max_hp) /* a lower maximum caps the HP */
            spec->hp = spec->max_hp;
    } else if (is(name, "ascension")) {
        if (sf_cli_int(prog, name, value, 0, SF_MAX_ASCENSION, &v) < 0)
            return SF_EINVAL;
        spec->ascension = (int)v;
    } else if (is(name, "max-turns")) {
        if (sf_cli_int(prog, name, value, 1, SF_MAX_TURNS_LIMIT, &v) < 0)
            return SF_EINVAL;
        spec->max_turns = (int)v;
    } else if (is(name, "encounter")) {
        int e = value ? sf_encounter_lookup(value) : -1;
        if (e < 0) {
            fprintf(stderr, "%s: --encounter: unknown encounter '%s'\n", prog, value ? value : "");
            return SF_EINVAL;
        }
        spec->encounter = e;
    } else {
        return 0;
    }
    return 1;
}

const char sf_cli_start_usage[] =
    "start flags:\n"
    "  --start S           starter | rewards (default starter): rewards plays an Act-1\n"
    "                      run prefix by the game's reward rules before each fight\n"
    "                      (docs/starts.md); the fight's class places it on the path\n"
    "  --picker P          random | greedy (default greedy): who takes the rewards\n";

int sf_cli_start_flag(const char *prog, const char *name, const char *value, sf_start_opts *opts) {
    if (is(name, "start")) {
        int k = value ? sf_start_kind_lookup(value) : SF_ENOTFOUND;
        if (k < 0) {
            fprintf(stderr, "%s: --start: expected starter or rewards, got '%s'\n", prog,
                    value ? value : "");
            return SF_EINVAL;
        }
        opts->start = k;
    } else if (is(name, "picker")) {
        int k = value ? sf_picker_lookup(value) : SF_ENOTFOUND;
        if (k < 0 || k == SF_PICK_CALLBACK) {
            fprintf(stderr, "%s: --picker: expected random or greedy, got '%s'\n", prog,
                    value ? value : "");
            return SF_EINVAL;
        }
        opts->picker = k;
    } else {
        return 0;
    }
    return 1;
}

int sf_cli_shared_flag(const char *prog, const char *name, const char *value, sf_cli_flags *f) {
    int rc = sf_cli_search_flag(prog, name, value, f->cfg);
    if (rc == 0)
        rc = sf_cli_net_flag(prog, name, value, f->net);
    if (rc == 0) {
        rc = sf_cli_start_flag(prog, name, value, f->start);
        f->start_given |= rc == 1;
        f->picker_given |= rc == 1 && is(name, "picker");
    }
    if (rc == 0) {
        rc = sf_cli_fight_flag(prog, name, value, f->spec);
        f->encounter_given |= rc == 1 && is(name, "encounter");
        if (rc == 1 && !f->fight_flag[0])
            snprintf(f->fight_flag, sizeof f->fight_flag, "%s", name);
        if (rc == 1 && !f->player_flag[0] && sf_cli_is_player_flag(name))
            snprintf(f->player_flag, sizeof f->player_flag, "%s", name);
    }
    return rc;
}

int sf_cli_start_check(const char *prog, const sf_cli_flags *f) {
    if (f->start->start == SF_START_REWARDS && f->player_flag[0]) {
        fprintf(stderr,
                "%s: --%s has no effect with --start rewards (the run prefix draws the "
                "deck, relics, potions and HP)\n",
                prog, f->player_flag);
        return SF_EINVAL;
    }
    if (f->picker_given && f->start->start != SF_START_REWARDS) {
        fprintf(stderr, "%s: --picker needs --start rewards\n", prog);
        return SF_EINVAL;
    }
    return SF_OK;
}

const char *sf_cli_band_name(int band) {
    return band == SF_BAND_WIN ? "WIN" : band == SF_BAND_LOSS ? "LOSS" : "";
}

const char *sf_cli_reason_name(int reason) {
    static const char *names[] = {"single legal action", "proven win",
                                  "best mean",           "most visited within margin",
                                  "guard: block",        "guard: free play",
                                  "gumbel final action", "all actions lost"};
    return reason >= 0 && reason < 8 ? names[reason] : "?";
}

/* The flags of both tools that take no value. */
static int takes_no_value(const char *name) {
    static const char *const flags[] = {
        "rescale",     "distributional", "no-guards", "no-transposition-stop",
        "clairvoyant", "json",           "help"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (strcmp(name, flags[i]) == 0)
            return 1;
    return 0;
}

int sf_cli_next_flag(const char *prog, int argc, char **argv, int *i, char name[64],
                     const char **value) {
    const char *arg = argv[*i];
    *value = NULL;
    if (strncmp(arg, "--", 2) != 0) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", prog, arg);
        return SF_EINVAL;
    }
    const char *eq = strchr(arg + 2, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    if (len >= 64) {
        fprintf(stderr, "%s: unknown flag '%s'\n", prog, arg);
        return SF_EINVAL;
    }
    memcpy(name, arg + 2, len);
    name[len] = 0;
    if (eq) {
        *value = eq + 1;
    } else if (!takes_no_value(name)) {
        if (*i + 1 >= argc) {
            /* the flag tables live in the tools, so this may be a typo too */
            fprintf(stderr, "%s: --%s needs a value, or is not a flag (--help lists them)\n", prog,
                    name);
            return SF_EINVAL;
        }
        *value = argv[++*i];
    }
    return SF_OK;
}

int sf_cli_net_flag(const char *prog, const char *name, const char *value, sf_cli_net *net) {
    char *dst;
    size_t cap;
    if (is(name, "model")) {
        dst = net->model;
        cap = sizeof net->model;
    } else if (is(name, "evald")) {
        dst = net->endpoint;
        cap = sizeof net->endpoint;
    } else {
        return 0;
    }
    if (!value || !*value || strlen(value) >= cap) {
        fprintf(stderr, "%s: --%s: expected a value shorter than %zu bytes\n", prog, name, cap);
        return SF_EINVAL;
    }
    snprintf(dst, cap, "%s", value);
    return 1;
}

int sf_cli_net_check(const char *prog, const sf_search_config *cfg, int raw_policy,
                     const sf_cli_net *net) {
    int wants = cfg->evaluator == SF_EVAL_EXTERNAL || raw_policy;
    if (cfg->leaf_mix > 0.0 && cfg->evaluator != SF_EVAL_EXTERNAL) {
        fprintf(stderr, "%s: --leaf-mix mixes a network's leaf values: it needs --eval net\n",
                prog);
        return SF_EINVAL;
    }
    if (wants && !net->model[0]) {
        fprintf(stderr, "%s: %s needs --model PATH[@SHA256]\n", prog,
                raw_policy ? "--policy net" : "--eval net");
        return SF_EINVAL;
    }
    if (!wants && (net->model[0] || net->endpoint[0])) {
        fprintf(stderr, "%s: --%s has no effect without --eval net or --policy net\n", prog,
                net->model[0] ? "model" : "evald");
        return SF_EINVAL;
    }
    return SF_OK;
}
