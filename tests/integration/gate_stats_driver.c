/* gate_stats_driver.c — the gate statistics (gate/stats.h) on the command
 * line, for test_gate_stats.py to compare with scipy.stats. Reads one
 * request per line on stdin and writes one answer line per request on
 * stdout, every number with 17 significant digits (so a double round-trips):
 *
 *   sign B C                    -> p_greater log_p_greater p_two_sided
 *   cp X N LEVEL                -> lo hi
 *   winrate B C N LEVEL         -> diff lo hi
 *   wilcoxon N d1 .. dN         -> n zeros r_plus r_minus tie_term exact z p_greater p_two
 *   boot SEED B LEVEL N d1..dN  -> mean lo hi
 *   llr NM NZ NP D0 D1          -> llr llr_normal lambda0 lambda1
 *   sprt METRIC ALPHA BETA D0 D1 MIN MAX N d1..dN
 *                               -> decision stop_pair llr llr_1 .. llr_pairs
 *
 * A request that the library refuses prints "error CODE MESSAGE". */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate/stats.h"

static char *next_tok(char **p) {
    return strtok_r(NULL, " \t\r\n", p);
}

static int read_doubles(char **sp, size_t n, double *out) {
    for (size_t i = 0; i < n; i++) {
        char *t = next_tok(sp);
        if (!t)
            return -1;
        out[i] = strtod(t, NULL);
    }
    return 0;
}

static double tok_d(char **sp) {
    char *t = next_tok(sp);
    return t ? strtod(t, NULL) : 0.0;
}

static long long tok_ll(char **sp) {
    char *t = next_tok(sp);
    return t ? strtoll(t, NULL, 10) : 0;
}

static void fail(const sf_err *e) {
    printf("error %d %s\n", e->code, e->msg);
}

int main(void) {
    size_t cap = 1 << 20;
    char *line = malloc(cap);
    double *d = NULL;
    size_t dcap = 0;
    ssize_t len;
    if (!line)
        return 1;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        char *sp = NULL;
        char *cmd = strtok_r(line, " \t\r\n", &sp);
        sf_err e = {0};
        if (!cmd)
            continue;
        if (!strcmp(cmd, "sign")) {
            long long b = tok_ll(&sp), c = tok_ll(&sp);
            sf_gate_sign s;
            if (sf_gate_sign_test(b, c, &s, &e) < 0)
                fail(&e);
            else
                printf("%.17g %.17g %.17g\n", s.p_greater, s.log_p_greater, s.p_two_sided);
        } else if (!strcmp(cmd, "cp")) {
            long long x = tok_ll(&sp), n = tok_ll(&sp);
            double level = tok_d(&sp), lo, hi;
            if (sf_gate_clopper_pearson(x, n, level, &lo, &hi, &e) < 0)
                fail(&e);
            else
                printf("%.17g %.17g\n", lo, hi);
        } else if (!strcmp(cmd, "winrate")) {
            long long b = tok_ll(&sp), c = tok_ll(&sp), n = tok_ll(&sp);
            double level = tok_d(&sp);
            sf_gate_winrate w;
            if (sf_gate_winrate_diff(b, c, n, level, &w, &e) < 0)
                fail(&e);
            else
                printf("%.17g %.17g %.17g\n", w.diff, w.lo, w.hi);
        } else if (!strcmp(cmd, "llr")) {
            unsigned long long nm = (unsigned long long)tok_ll(&sp);
            unsigned long long nz = (unsigned long long)tok_ll(&sp);
            unsigned long long np = (unsigned long long)tok_ll(&sp);
            double d0 = tok_d(&sp), d1 = tok_d(&sp), p[3], l0 = 0, l1 = 0;
            sf_gate_trinomial_mle(nm, nz, np, d0, p, &l0);
            sf_gate_trinomial_mle(nm, nz, np, d1, p, &l1);
            printf("%.17g %.17g %.17g %.17g\n", sf_gate_llr_trinomial(nm, nz, np, d0, d1),
                   sf_gate_llr_trinomial_normal(nm, nz, np, d0, d1), l0, l1);
        } else {
            sf_gate_rule rule = sf_gate_rule_default();
            uint64_t seed = 0;
            uint32_t resamples = 0;
            double level = 0;
            int is_sprt = !strcmp(cmd, "sprt"), is_boot = !strcmp(cmd, "boot");
            if (!is_sprt && !is_boot && strcmp(cmd, "wilcoxon")) {
                printf("error %d unknown request '%s'\n", SF_EINVAL, cmd);
                fflush(stdout);
                continue;
            }
            if (is_sprt) {
                rule.metric = (int)tok_ll(&sp);
                rule.alpha = tok_d(&sp);
                rule.beta = tok_d(&sp);
                rule.delta0 = tok_d(&sp);
                rule.delta1 = tok_d(&sp);
                rule.min_pairs = (uint32_t)tok_ll(&sp);
                rule.max_pairs = (uint32_t)tok_ll(&sp);
            }
            if (is_boot) {
                char *t = next_tok(&sp);
                seed = t ? strtoull(t, NULL, 10) : 0;
                resamples = (uint32_t)tok_ll(&sp);
                level = tok_d(&sp);
            }
            size_t n = (size_t)tok_ll(&sp);
            if (n > dcap) {
                free(d);
                d = malloc(n * sizeof *d);
                dcap = n;
                if (!d)
                    return 1;
            }
            if (read_doubles(&sp, n, d) < 0) {
                printf("error %d short request\n", SF_EINVAL);
            } else if (is_boot) {
                sf_gate_interval iv;
                if (sf_gate_bootstrap_mean(d, n, resamples, level, seed, NULL, &iv, &e) < 0)
                    fail(&e);
                else
                    printf("%.17g %.17g %.17g\n", iv.mean, iv.lo, iv.hi);
            } else if (!is_sprt) {
                sf_gate_wilcoxon w;
                if (sf_gate_wilcoxon_test(d, n, NULL, &w, &e) < 0)
                    fail(&e);
                else
                    printf("%zu %zu %.17g %.17g %.17g %d %.17g %.17g %.17g\n", w.n, w.zeros,
                           w.r_plus, w.r_minus, w.tie_term, w.exact, w.z, w.p_greater,
                           w.p_two_sided);
            } else {
                sf_sprt s;
                double *h = malloc(((size_t)rule.max_pairs + 1) * sizeof *h);
                if (!h)
                    return 1;
                if (sf_sprt_init(&s, &rule, h, (size_t)rule.max_pairs, &e) < 0) {
                    fail(&e);
                } else {
                    size_t i = 0;
                    while (i < n && sf_sprt_decision(&s) == SF_GATE_CONTINUE)
                        if (sf_sprt_add(&s, d[i++]) < 0)
                            break;
                    printf("%s %" PRIu64 " %.17g", sf_gate_decision_name(sf_sprt_decision(&s)),
                           s.stop_pair, sf_sprt_llr(&s));
                    size_t hl = 0;
                    const double *hv = sf_sprt_history(&s, &hl);
                    for (size_t k = 0; k < hl; k++)
                        printf(" %.17g", hv[k]);
                    printf("\n");
                }
                free(h);
            }
        }
        fflush(stdout);
    }
    free(line);
    free(d);
    return 0;
}
