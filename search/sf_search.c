/*
 * sf-search — search one position and print the root table: per action the
 * visits, mean Q, completed-Q, improved policy pi', prior and proof band,
 * then the chosen action and the search's counters.
 *
 *   sf-search --encounter "Jaw Worm" --seed 3 --sims 8000 --trees 2 --threads 2
 *   sf-search --state saved.json --select gumbel --json
 *
 * Exit codes: 0 ok, 1 the search failed, 2 bad arguments or input.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search/cli.h"
#include "search/netsearch.h"
#include "search/search.h"

static const char *prog = "sf-search";

static void usage(FILE *f) {
    fprintf(f,
            "usage: sf-search [--encounter NAME | --state FILE.json] [--seed N] [fight flags]\n"
            "                 [--play I,J,...] [--run-seed N] [--decision N] [--threads T]\n"
            "                 [--start starter|rewards [--picker P]] [--json] [search flags]\n"
            "Searches the position (the fight's first decision, after the --play action\n"
            "indices) and prints the root table. --start rewards draws the player by an\n"
            "Act-1 run prefix (run and game seed: --seed). Exit codes: 0 ok, 1 the search\n"
            "failed, 2 bad arguments or a bad state file.\n\n%s\n%s\n%s",
            sf_cli_fight_usage, sf_cli_start_usage, sf_cli_search_usage);
}

static int load_state(const char *path, sf_state *s) {
    sf_err e = {0};
    int rc = sf_engine_load_file(path, s, &e);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", prog, e.msg);
    return rc;
}

static int play_prefix(sf_state *s, const char *list) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    char *save = NULL;
    int ply = 0;
    if (sf_cli_list(prog, "play", list, sizeof buf) < 0)
        return SF_EINVAL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), ply++) {
        sf_action acts[SF_MAX_ACTIONS];
        int n = sf_engine_enumerate(s, acts, SF_MAX_ACTIONS);
        long k;
        if (sf_cli_int(prog, "play", tok, 0, n > 0 ? n - 1 : 0, &k) < 0 || n <= 0) {
            fprintf(stderr, "%s: --play: ply %d has %d legal actions\n", prog, ply, n);
            return SF_EINVAL;
        }
        sf_engine_apply(s, acts[k], NULL);
    }
    if (sf_engine_is_terminal(s)) {
        sf_outcome o;
        sf_engine_outcome(s, &o);
        fprintf(stderr, "%s: --play: the fight is over after the given plies%s\n", prog,
                o.turn_limit ? " (it ended at the turn cap, --max-turns)" : "");
        return SF_EINVAL;
    }
    return SF_OK;
}

static void print_json(const sf_state *st, const sf_search_config *c, const sf_search_result *r,
                       double seconds) {
    json_t *root = json_object();
    json_t *acts = json_array();
    char name[160];
    for (int a = 0; a < r->n_actions; a++) {
        const sf_root_stat *x = &r->actions[a];
        sf_engine_action_name(st, x->action, name, sizeof name);
        json_t *o = json_object();
        json_object_set_new(o, "action", json_string(name));
        json_object_set_new(o, "code", json_integer(sf_action_code(x->action)));
        json_object_set_new(o, "visits", json_integer(x->visits));
        json_object_set_new(o, "q", json_real(x->q));
        json_object_set_new(o, "completed_q", json_real(x->completed_q));
        json_object_set_new(o, "score", json_real(x->score));
        json_object_set_new(o, "prior", json_real(x->prior));
        json_object_set_new(o, "policy", json_real(x->policy));
        json_object_set_new(o, "band", json_integer(x->band));
        json_array_append_new(acts, o);
    }
    json_object_set_new(root, "actions", acts);
    json_object_set_new(root, "chosen", json_integer(r->chosen));
    json_object_set_new(root, "chosen_reason", json_string(sf_cli_reason_name(r->chosen_reason)));
    json_object_set_new(root, "searched", json_boolean(r->searched));
    json_object_set_new(root, "select", json_string(sf_search_select_name(r->select)));
    json_object_set_new(root, "root_raw_value", json_real(r->root_raw_value));
    json_object_set_new(root, "root_search_value", json_real(r->root_search_value));
    json_object_set_new(root, "rollouts_cut_off", json_integer((json_int_t)r->rollouts_cut_off));
    json_object_set_new(root, "v_mix", json_real(r->v_mix));
    json_t *tv = json_array();
    for (int k = 0; k < r->n_trees; k++)
        json_array_append_new(tv, json_real(r->tree_value[k]));
    json_object_set_new(root, "tree_values", tv);
    json_object_set_new(root, "simulations", json_integer((json_int_t)r->simulations));
    json_object_set_new(root, "evaluations", json_integer((json_int_t)r->evaluations));
    json_object_set_new(root, "node_creations", json_integer((json_int_t)r->node_creations));
    json_object_set_new(root, "merges", json_integer((json_int_t)r->merges));
    json_object_set_new(root, "merge_ratio", json_real(r->merge_ratio));
    json_object_set_new(root, "chance_nodes", json_integer((json_int_t)r->chance_nodes));
    json_object_set_new(root, "widen_new", json_integer((json_int_t)r->widen_new));
    json_object_set_new(root, "widen_merged", json_integer((json_int_t)r->widen_merged));
    json_object_set_new(root, "widen_capped", json_integer((json_int_t)r->widen_capped));
    json_object_set_new(root, "transposition_stops",
                        json_integer((json_int_t)r->transposition_stops));
    json_object_set_new(root, "max_depth", json_integer(r->max_depth));
    json_object_set_new(root, "edge_pool_full", json_integer((json_int_t)r->edge_pool_full));
    json_object_set_new(root, "feat_truncated", json_integer((json_int_t)r->feat_truncated));
    json_object_set_new(root, "budget", json_integer(c->simulations));
    json_object_set_new(root, "trees", json_integer(c->trees));
    json_object_set_new(root, "seconds", json_real(seconds));
    char *text = json_dumps(root, JSON_INDENT(2));
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(root);
}

static void print_table(const sf_state *st, const sf_search_config *c, const sf_search_result *r,
                        double seconds) {
    char name[160];
    printf("search: %d simulations, %d trees, %s, %s evaluator", c->simulations, c->trees,
           sf_search_select_name(r->select),
           c->evaluator == SF_EVAL_UNIFORM    ? "uniform"
           : c->evaluator == SF_EVAL_EXTERNAL ? "net"
                                              : "rollout");
    if (c->evaluator == SF_EVAL_EXTERNAL && c->leaf_mix > 0.0)
        printf(" (leaf mix %g: (1 - mix) * network + mix * rollout)", c->leaf_mix);
    printf(", %s root\n", c->root == SF_ROOT_CLAIRVOYANT ? "clairvoyant" : "belief");
    printf(" #  %-34s %8s %8s %8s %8s %7s  %s\n", "action", "visits", "Q", "complQ", "pi'", "prior",
           "band");
    for (int a = 0; a < r->n_actions; a++) {
        const sf_root_stat *x = &r->actions[a];
        sf_engine_action_name(st, x->action, name, sizeof name);
        printf("%2d%s %-34s %8u %8.4f %8.4f %8.4f %7.4f  %s\n", a, a == r->chosen ? "*" : " ", name,
               x->visits, x->q, x->completed_q, x->policy, x->prior, sf_cli_band_name(x->band));
    }
    sf_engine_action_name(st, r->chosen_action, name, sizeof name);
    printf("chosen: %s (%s)\n", name, sf_cli_reason_name(r->chosen_reason));
    if (!r->searched)
        return;
    printf("simulations %llu, evaluations %llu, nodes %llu, merges %llu (ratio %.3f), chance "
           "nodes %llu\n",
           (unsigned long long)r->simulations, (unsigned long long)r->evaluations,
           (unsigned long long)r->node_creations, (unsigned long long)r->merges, r->merge_ratio,
           (unsigned long long)r->chance_nodes);
    printf("widening: new %llu, merged %llu, capped %llu; transposition stops %llu; depth %u; "
           "pool full %llu\n",
           (unsigned long long)r->widen_new, (unsigned long long)r->widen_merged,
           (unsigned long long)r->widen_capped, (unsigned long long)r->transposition_stops,
           r->max_depth, (unsigned long long)r->edge_pool_full);
    printf("root value: raw %.4f, searched %.4f; v_mix %.4f; per-tree root Q:", r->root_raw_value,
           r->root_search_value, r->v_mix);
    for (int k = 0; k < r->n_trees; k++)
        printf(" %.4f", r->tree_value[k]);
    printf("\ntime %.1f ms (%.0f simulations/s)\n", seconds * 1e3,
           seconds > 0 ? (double)r->simulations / seconds : 0.0);
}

int main(int argc, char **argv) {
    sf_fight_spec spec;
    sf_fight_spec_default(&spec);
    sf_search_config cfg;
    sf_search_config_default(&cfg);
    uint64_t seed = 1, run_seed = 0, decision = 0;
    int have_run_seed = 0, json = 0;
    long threads = 1;
    const char *state_path = NULL, *play = NULL;
    sf_start_opts start;
    sf_start_opts_default(&start);
    sf_cli_net net;
    memset(&net, 0, sizeof net);
    sf_cli_flags shared = {.cfg = &cfg, .net = &net, .start = &start, .spec = &spec};
    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *value;
        if (sf_cli_next_flag(prog, argc, argv, &i, name, &value) < 0) {
            usage(stderr);
            return 2;
        }
        int rc = sf_cli_shared_flag(prog, name, value, &shared);
        if (rc < 0)
            return 2;
        if (rc == 1)
            continue;
        if (strcmp(name, "help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(name, "json") == 0) {
            json = 1;
        } else if (strcmp(name, "seed") == 0) {
            if (sf_cli_u64(prog, name, value, &seed) < 0)
                return 2;
        } else if (strcmp(name, "run-seed") == 0) {
            if (sf_cli_u64(prog, name, value, &run_seed) < 0)
                return 2;
            have_run_seed = 1;
        } else if (strcmp(name, "decision") == 0) {
            if (sf_cli_u64(prog, name, value, &decision) < 0)
                return 2;
        } else if (strcmp(name, "threads") == 0) {
            if (sf_cli_int(prog, name, value, 1, SF_SEARCH_MAX_TREES, &threads) < 0)
                return 2;
        } else if (strcmp(name, "state") == 0) {
            state_path = value;
        } else if (strcmp(name, "play") == 0) {
            play = value;
        } else {
            fprintf(stderr, "%s: unknown flag '--%s'\n", prog, name);
            usage(stderr);
            return 2;
        }
    }
    sf_err e = {0};
    if (sf_search_config_validate(&cfg, &e) < 0) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        return 2;
    }
    if (sf_cli_net_check(prog, &cfg, 0, &net) < 0)
        return 2;
    sf_netsearch *model = NULL;
    sf_netsearch_session *session = NULL;
    if (cfg.evaluator == SF_EVAL_EXTERNAL) {
        if (threads > 1) {
            fprintf(stderr, "%s: --threads: a network is evaluated in one thread\n", prog);
            return 2;
        }
        if (sf_netsearch_open(net.model, net.endpoint[0] ? net.endpoint : NULL, &model, &e) < 0 ||
            sf_netsearch_session_open(model, &session, &e) < 0) {
            fprintf(stderr, "%s: %s\n", prog, e.msg);
            sf_netsearch_close(model);
            return 2;
        }
    }
    if (state_path && (shared.fight_flag[0] || shared.start_given)) {
        fprintf(stderr, "%s: --%s has no effect with --state (the state file fixes the fight)\n",
                prog, shared.fight_flag[0] ? shared.fight_flag : "start");
        return 2;
    }
    if (sf_cli_start_check(prog, &shared) < 0)
        return 2;
    sf_state st;
    if (state_path) {
        if (load_state(state_path, &st) < 0)
            return 2;
    } else {
        if (start.start == SF_START_REWARDS) {
            sf_start_desc d;
            start.ascension = spec.ascension;
            if (sf_start_sample(&start, seed, seed, spec.encounter, &spec, &d, &e) < 0) {
                fprintf(stderr, "%s: %s\n", prog, e.msg);
                return 1;
            }
            if (!json)
                printf("start (floor %d, rooms %s): %s\n", d.floor, d.path, d.text);
        }
        spec.seed = seed;
        if (sf_engine_init(&st, &spec, &e) < 0) {
            fprintf(stderr, "%s: %s\n", prog, e.msg);
            return 2;
        }
    }
    if (play && play_prefix(&st, play) < 0)
        return 2;
    if (sf_engine_is_terminal(&st)) {
        fprintf(stderr, "%s: the position is terminal\n", prog);
        return 2;
    }
    if (!have_run_seed)
        run_seed = seed;
    if (!json) {
        char text[8192];
        sf_engine_render_text(&st, text, sizeof text);
        printf("%s\n", text);
    }
    sf_search_result r;
    uint64_t t0 = sf_now_ns();
    int rc = sf_search_decide(&cfg, &st, run_seed, decision, (int)threads,
                              session ? sf_netsearch_eval_fn : NULL, session, &r, &e);
    sf_netsearch_session_close(session);
    sf_netsearch_close(model);
    double seconds = (double)(sf_now_ns() - t0) * 1e-9;
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", prog, e.msg);
        return 1;
    }
    if (json)
        print_json(&st, &cfg, &r, seconds);
    else
        print_table(&st, &cfg, &r, seconds);
    return 0;
}
