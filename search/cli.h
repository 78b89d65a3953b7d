/*
 * cli.h — option parsing shared by sf-search and sf-arena (internal to the
 * search tools): the search configuration flags and the fight flags, each
 * bad value reported with the flag's name. Not part of the library.
 */
#ifndef SF_SEARCH_CLI_H
#define SF_SEARCH_CLI_H

#include "search/search.h"

/* Parse an integer flag value in [lo, hi]; on error print
 * "<prog>: --<flag>: ..." to stderr and return SF_EINVAL. */
int sf_cli_int(const char *prog, const char *flag, const char *text, long lo, long hi, long *out);
int sf_cli_u64(const char *prog, const char *flag, const char *text, uint64_t *out);
int sf_cli_double(const char *prog, const char *flag, const char *text, double lo, double hi,
                  double *out);

/* Check a comma-separated list value (--play, --classes): not empty, no
 * empty element, shorter than `cap` bytes. Prints "<prog>: --<flag> '...':
 * ..." and returns SF_EINVAL, else SF_OK. */
int sf_cli_list(const char *prog, const char *flag, const char *list, size_t cap);

/* Apply one search flag (name without "--", value or NULL) to `cfg`.
 * Returns 1 when the flag was a search flag and applied, 0 when it is not a
 * search flag, SF_EINVAL after printing an error. Flags: sims, trees,
 * select (auto|uct|puct|gumbel), eval (rollout|uniform|net: net sets
 * SF_EVAL_EXTERNAL, the tool supplies the model), uct-c, fpu, gumbel-m,
 * c-scale, rescale, distributional, cvar-alpha, cvar-lambda, horizon,
 * pw-c, pw-alpha, pw-end-c, pw-end-alpha, margin, no-guards,
 * no-transposition-stop, clairvoyant, leaf-mix. */
int sf_cli_search_flag(const char *prog, const char *name, const char *value,
                       sf_search_config *cfg);

/* Apply one fight flag to `spec`: deck, relics, potions, hp, max-hp,
 * ascension, max-turns, encounter. Same return convention. */
int sf_cli_fight_flag(const char *prog, const char *name, const char *value, sf_fight_spec *spec);

/* 1 for the fight flags that set the player (deck, relics, potions, hp,
 * max-hp): those a rewards start draws itself, so --start rewards refuses
 * them; 0 for the others (encounter, ascension, max-turns). */
int sf_cli_is_player_flag(const char *name);

/* Apply one start flag to `opts`: start (starter|rewards), picker
 * (random|greedy). Same return convention. */
int sf_cli_start_flag(const char *prog, const char *name, const char *value, sf_start_opts *opts);

/* Split argv[*i] ("--name=value", "--name value" or "--flag") into
 * name[64] and *value, advancing *i past a separate value. *value is NULL
 * for the flags that take none (rescale, distributional, no-guards,
 * no-transposition-stop, clairvoyant, json, help). Prints the error and
 * returns SF_EINVAL for a non-flag argument, an over-long name or a missing
 * value. */
int sf_cli_next_flag(const char *prog, int argc, char **argv, int *i, char name[64],
                     const char **value);

/* The network a tool plays with (--model, --evald). */
typedef struct sf_cli_net {
    char model[4096];   /* PATH[@SHA256], or a bare SHA-256 with --evald */
    char endpoint[256]; /* a running gpu-evald; "" = in-process          */
} sf_cli_net;

/* Apply --model or --evald to `net`; same return convention. */
int sf_cli_net_flag(const char *prog, const char *name, const char *value, sf_cli_net *net);

/* After parsing: a network evaluator (--eval net, or the raw policy when
 * raw_policy) needs --model, and --model/--evald need one of them. Prints
 * the error and returns SF_EINVAL, else SF_OK. */
int sf_cli_net_check(const char *prog, const sf_search_config *cfg, int raw_policy,
                     const sf_cli_net *net);

/* The flags sf-search and sf-arena both take: the search, network, start
 * and fight flags, applied to the tool's own values, with what the tools
 * check after parsing recorded as they are seen. Point the four members at
 * the tool's values and zero the rest. */
typedef struct sf_cli_flags {
    sf_search_config *cfg;
    sf_cli_net *net;
    sf_start_opts *start;
    sf_fight_spec *spec;
    int start_given;      /* a start flag (--start, --picker) was applied  */
    int picker_given;     /* --picker was applied                          */
    int encounter_given;  /* --encounter was applied                       */
    char fight_flag[64];  /* the first fight flag applied, "" if none      */
    char player_flag[64]; /* the first that sets the player (sf_cli_is_player_flag) */
} sf_cli_flags;

/* Apply one flag of those sets, tried in the order search, network, start,
 * fight. Same return convention as sf_cli_search_flag(). */
int sf_cli_shared_flag(const char *prog, const char *name, const char *value, sf_cli_flags *f);

/* After parsing, the start rules both tools share: --start rewards draws
 * the player, so a player flag is refused with it; --picker needs --start
 * rewards. Prints the error and returns SF_EINVAL, else SF_OK. */
int sf_cli_start_check(const char *prog, const sf_cli_flags *f);

/* Usage text for the flags above. */
extern const char sf_cli_search_usage[];
extern const char sf_cli_fight_usage[];
extern const char sf_cli_start_usage[];

/* Names for printing. */
const char *sf_cli_band_name(int band);
const char *sf_cli_reason_name(int reason);

#endif
