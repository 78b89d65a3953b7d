/*
 * sf-model — inspect, verify and exercise model bundles (docs/model.md).
 *
 *   sf-model info BUNDLE
 *   sf-model verify [--sha256 HEX] [--backend B] [--precision P] BUNDLE
 *   sf-model eval [--backend B] [--precision P] BUNDLE POSITIONS OUT
 *   sf-model parity [--precision P] [--tolerance X] BUNDLE [POSITIONS]
 *                  (the bundle's canary tolerances of P; --tolerance X: an
 *                  absolute X on every output instead)
 *   sf-model emulate BUNDLE   (the canary on the cpu backend with tf32 and
 *                  bf16 matrix products emulated, against the bundle's
 *                  tolerances of each precision)
 *   sf-model bench [--backend B] [--precision P] [--batch N,N,..] [--seconds S]
 *                  [--tokens T --queries Q] BUNDLE [POSITIONS]
 *   sf-model random --arch tiny|base --seed N [--canary N] OUT
 *   sf-model positions --seed N --count N OUT
 *
 * Exit status: 0 success, 1 a check failed or an error, 2 bad usage.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h" /* sf_net_create_emulated */
#include "model/model.h"

static int usage_to(FILE *out, int code) {
    fprintf(out,
            "usage: sf-model info BUNDLE\n"
            "       sf-model verify [--sha256 HEX] [--backend cpu|cuda] [--precision "
            "fp32|tf32|bf16] BUNDLE\n"
            "       sf-model eval [--backend B] [--precision P] BUNDLE POSITIONS OUT\n"
            "       sf-model parity [--precision P] [--tolerance X] BUNDLE [POSITIONS]\n"
            "       sf-model emulate BUNDLE\n"
            "       sf-model bench [--backend B] [--precision P] [--batch N,N,...] [--seconds S]\n"
            "                      [--tokens T --queries Q] BUNDLE [POSITIONS]\n"
            "       sf-model random --arch tiny|base --seed N [--canary N] OUT\n"
            "       sf-model positions --seed N --count N OUT\n");
    return code;
}

static int usage(void) {
    return usage_to(stderr, 2);
}

typedef struct {
    const char *sha; /* the --sha256 pin (sha_buf), or NULL */
    char sha_buf[65];
    sf_net_opts net;
    double tolerance;
    const char *batches;
    double seconds;
    const char *arch;
    int tokens, queries; /* bench: fixed-shape positions when tokens > 0 */
    uint64_t seed;
    int have_seed;
    int canary;
    int count;
    const char *pos[3];
    int npos;
} args_t;

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* Options and file arguments after the command (argv[0] is the command). */
static int parse_args(int argc, char **argv, args_t *a) {
    memset(a, 0, sizeof *a);
    a->canary = 16;
    a->tolerance = -1;
    a->seconds = 2.0;
    a->batches = "1,16,64,256";
    enum {
        O_SHA = 1,
        O_BACKEND,
        O_PRECISION,
        O_TOLERANCE,
        O_BATCH,
        O_SECONDS,
        O_ARCH,
        O_TOKENS,
        O_QUERIES,
        O_THREADS,
        O_SEED,
        O_CANARY,
        O_COUNT
    };
    static const struct option opts[] = {{"sha256", required_argument, 0, O_SHA},
                                         {"backend", required_argument, 0, O_BACKEND},
                                         {"precision", required_argument, 0, O_PRECISION},
                                         {"tolerance", required_argument, 0, O_TOLERANCE},
                                         {"batch", required_argument, 0, O_BATCH},
                                         {"seconds", required_argument, 0, O_SECONDS},
                                         {"arch", required_argument, 0, O_ARCH},
                                         {"tokens", required_argument, 0, O_TOKENS},
                                         {"queries", required_argument, 0, O_QUERIES},
                                         {"threads", required_argument, 0, O_THREADS},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"canary", required_argument, 0, O_CANARY},
                                         {"count", required_argument, 0, O_COUNT},
                                         {0, 0, 0, 0}};
    opterr = 0; /* our messages, in our words */
    optind = 1;
    int ch, li = 0;
    while ((ch = getopt_long(argc, argv, ":", opts, &li)) != -1) {
        /* the option just read, when it is the one at fault (':' and '?') */
        const char *s = argv[optind - 1], *v = optarg;
        char shortopt[3] = {'-', (char)optopt, 0};
        if (ch == '?' && optopt && strncmp(s, "--", 2) != 0)
            s = shortopt;
        uint64_t u;
        char *end;
        int ok = 1;
        switch (ch) {
        case ':': fprintf(stderr, "sf-model: option %s needs a value\n", s); return -1;
        case '?': fprintf(stderr, "sf-model: unknown or ambiguous option %s\n", s); return -1;
        case O_SHA: {
            sf_err e = {0}; /* either case; kept in lower case (common.h) */
            if (sf_sha256_hex_parse(v, a->sha_buf, &e) != SF_OK) {
                fprintf(stderr, "sf-model: --sha256: %s\n", e.msg);
                return -1;
            }
            a->sha = a->sha_buf;
            break;
        }
        case O_BACKEND:
            if (sf_backend_parse(v, &a->net.backend) != SF_OK) {
                fprintf(stderr, "sf-model: --backend %s: expected cpu or cuda\n", v);
                return -1;
            }
            break;
        case O_PRECISION:
            if (sf_precision_parse(v, &a->net.precision) != SF_OK) {
                fprintf(stderr, "sf-model: --precision %s: expected fp32, tf32 or bf16\n", v);
                return -1;
            }
            break;
        case O_TOLERANCE:
            a->tolerance = strtod(v, &end);
            if (end == v || *end || !(a->tolerance >= 0) || a->tolerance > 1e6) {
                fprintf(stderr, "sf-model: --tolerance %s: expected a number >= 0\n", v);
                return -1;
            }
            break;
        case O_BATCH: a->batches = v; break;
        case O_SECONDS:
            a->seconds = strtod(v, &end);
            if (end == v || *end || !(a->seconds > 0) || a->seconds > 86400) {
                fprintf(stderr, "sf-model: --seconds %s: expected a number in (0, 86400]\n", v);
                return -1;
            }
            break;
        case O_ARCH: a->arch = v; break;
        case O_SEED:
            if (parse_u64(v, &a->seed) != 0) {
                fprintf(stderr, "sf-model: --seed %s: not an unsigned integer\n", v);
                return -1;
            }
            a->have_seed = 1;
            break;
        /* Counts: a bad value is reported below with the option's name. */
        case O_TOKENS:
            if ((ok = parse_u64(v, &u) == 0 && u >= 1 && u <= SF_FEAT_MAX_TOKENS))
                a->tokens = (int)u;
            break;
        case O_QUERIES:
            if ((ok = parse_u64(v, &u) == 0 && u <= SF_FEAT_MAX_QUERIES))
                a->queries = (int)u;
            break;
        case O_THREADS:
            if ((ok = parse_u64(v, &u) == 0 && u >= 1 && u <= 256))
                a->net.threads = (int)u;
            break;
        case O_CANARY:
            if ((ok = parse_u64(v, &u) == 0 && u >= 1 && u <= 100000))
                a->canary = (int)u;
            break;
        case O_COUNT:
            if ((ok = parse_u64(v, &u) == 0 && u >= 1 && u <= 1000000))
                a->count = (int)u;
            break;
        }
        if (!ok) {
            fprintf(stderr, "sf-model: --%s %s: bad value\n", opts[li].name, v);
            return -1;
        }
    }
    for (int i = optind; i < argc; i++) {
        if (a->npos == 3) {
            fprintf(stderr, "sf-model: too many arguments (at %s)\n", argv[i]);
            return -1;
        }
        a->pos[a->npos++] = argv[i];
    }
    return 0;
}

static int fail(const sf_err *e) {
    fprintf(stderr, "sf-model: %s\n", e->msg);
    return 1;
}

/* The end of a command that held a bundle, a net and positions (each may
 * be NULL): them freed, and its exit status for `rc`. */
static int finish(int rc, const sf_err *e, sf_bundle *b, sf_net *net, sf_positions *ps) {
    sf_net_free(net);
    sf_positions_free(ps);
    sf_bundle_free(b);
    return rc == SF_OK ? 0 : fail(e);
}

static int cmd_info(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b;
    if (sf_bundle_load(a->pos[0], a->sha, &b, &e) != SF_OK)
        return fail(&e);
    const sf_arch *ar = sf_bundle_arch(b);
    const sf_tensorfile *tf = sf_bundle_file(b);
    printf("path        %s\n", sf_bundle_path(b));
    printf("sha256      %s\n", sf_bundle_sha256(b));
    printf("arch        %s (d_model %d, n_layers %d, n_heads %d, d_ff %d, heads %d/%d/%d)\n",
           ar->name, ar->d_model, ar->n_layers, ar->n_heads, ar->d_ff, ar->d_value, ar->d_forecast,
           ar->d_policy);
    printf("parameters  %" PRId64 "\n", sf_arch_params(ar));
    printf("flops       %.3g per position of 48 tokens and 8 queries\n", sf_arch_flops(ar, 48, 8));
    printf("tensors     %d\n", sf_tensorfile_count(tf));
    const sf_positions *c = sf_bundle_canary(b);
    if (c) {
        printf("canary      %d golden positions\n", sf_positions_count(c));
        if (sf_bundle_format_version(b) == 1)
            printf("tolerances  per element |got - want| <= abs + rel |want|; bundle format 1: "
                   "its one absolute \"canary_tolerance\", at least 0.02 in tf32 and bf16\n");
        else
            printf("tolerances  per element |got - want| <= abs + rel |want|\n");
        for (int p = 0; p < SF_PRECISIONS; p++) {
            const sf_canary_tol *t = sf_bundle_canary_tolerance(b, (sf_precision)p);
            printf("  %-4s     ", sf_precision_name((sf_precision)p));
            for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
                printf("%s %s abs %g rel %g", o ? "," : "",
                       sf_canary_output_name((sf_canary_output)o), t->out[o].abs, t->out[o].rel);
            printf("\n");
        }
    } else {
        printf("canary      none (gpu-evald refuses to serve this bundle)\n");
    }
    printf("metadata\n");
    for (int i = 0; i < sf_tensorfile_meta_count(tf); i++) {
        sf_meta_kv kv = sf_tensorfile_meta_at(tf, i);
        printf("  %-18s %s\n", kv.key, kv.value);
    }
    sf_bundle_free(b);
    return 0;
}

static int cmd_verify(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b;
    sf_net *net;
    if (sf_bundle_load(a->pos[0], a->sha, &b, &e) != SF_OK)
        return fail(&e);
    if (sf_net_create(b, &a->net, &net, &e) != SF_OK) {
        sf_bundle_free(b);
        return fail(&e);
    }
    sf_canary_report r;
    int rc = sf_net_canary(net, b, &r, &e);
    printf("bundle      %s\nsha256      %s%s\n", sf_bundle_path(b), sf_bundle_sha256(b),
           a->sha ? " (matches the pin)" : "");
    if (rc == SF_OK || rc == SF_ECORRUPT) {
        const sf_tol *t = &r.tol.out[r.worst.head];
        printf("canary      %d positions on %s/%s: max |error| %.3g; nearest its limit: position "
               "%d %s, |error| %.3g = %.2f of limit %.3g (%s tolerance of %s: abs %g + rel %g x "
               "|expected|): %s\n",
               r.positions, sf_backend_name(a->net.backend), sf_precision_name(a->net.precision),
               r.max_abs_err, r.worst_position, r.worst.where, r.worst.err, r.max_ratio,
               r.worst.limit, sf_precision_name(r.precision), sf_canary_output_name(r.worst.head),
               t->abs, t->rel, r.passed ? "ok" : "FAILED");
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            printf("  %-9s max |error| %.3g, %.2f of its tolerance\n",
                   sf_canary_output_name((sf_canary_output)o), r.head_max_abs_err[o],
                   r.head_max_ratio[o]);
    }
    if (rc != SF_OK)
        fprintf(stderr, "sf-model: %s\n", e.msg);
    sf_net_free(net);
    sf_bundle_free(b);
    return rc == SF_OK ? 0 : 1;
}

/* The canary with each precision emulated on the cpu backend: what a GPU
 * in tf32 or bf16 should see, before one is at hand. */
static int cmd_emulate(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b;
    if (sf_bundle_load(a->pos[0], a->sha, &b, &e) != SF_OK)
        return fail(&e);
    int bad = 0;
    for (int p = 0; p < SF_PRECISIONS; p++) {
        sf_net *net = NULL;
        sf_canary_report r;
        int rc = sf_net_create_emulated(b, (sf_precision)p, a->net.threads, &net, &e);
        if (rc == SF_OK)
            rc = sf_net_canary(net, b, &r, &e);
        sf_net_free(net);
        if (rc != SF_OK && rc != SF_ECORRUPT) {
            sf_bundle_free(b);
            return fail(&e);
        }
        const char *pn = sf_precision_name((sf_precision)p);
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            printf("{\"bench\":\"evald.emulated_%s_%s_%s_max_abs_err\",\"value\":%.3g,"
                   "\"unit\":\"abs\",\"n\":%d,\"median\":%.3g}\n",
                   sf_bundle_arch(b)->name, pn, sf_canary_output_name((sf_canary_output)o),
                   r.head_max_abs_err[o], r.positions, r.head_max_abs_err[o]);
        printf("%s emulated: max |error|", pn);
        for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
            printf("%s %s %.3g (%.2f of its tolerance)", o ? "," : "",
                   sf_canary_output_name((sf_canary_output)o), r.head_max_abs_err[o],
                   r.head_max_ratio[o]);
        printf(": %s\n", r.passed ? "ok" : "FAILED");
        if (!r.passed) {
            fflush(stdout);
            fprintf(stderr, "sf-model: %s\n", e.msg);
            bad = 1;
        }
    }
    sf_bundle_free(b);
    return bad;
}

static int write_outputs(const char *path, const sf_net_out *o, int g, sf_err *e) {
    float *val = calloc((size_t)g * SF_NET_VALUE_BINS, 4), *pw = calloc((size_t)g, 4);
    float *fc = calloc((size_t)g * SF_NET_FORECASTS, 4);
    float *pol = calloc((size_t)g * SF_FEAT_MAX_QUERIES, 4);
    int32_t *nq = calloc((size_t)g, 4);
    int rc;
    if (!val || !pw || !fc || !pol || !nq) {
        rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    } else {
        for (int i = 0; i < g; i++) {
            memcpy(val + (size_t)i * SF_NET_VALUE_BINS, o[i].value, sizeof o[i].value);
            pw[i] = o[i].p_win;
            memcpy(fc + (size_t)i * SF_NET_FORECASTS, o[i].forecast, sizeof o[i].forecast);
            memcpy(pol + (size_t)i * SF_FEAT_MAX_QUERIES, o[i].policy, sizeof o[i].policy);
            nq[i] = o[i].n_queries;
        }
        sf_tensor t[5];
        char names[4][32];
        sf_net_out_tensors(g, "", val, pw, fc, pol, names, t);
        t[4] = (sf_tensor){"n_queries", SF_DT_I32, 1, {g}, nq, (size_t)g * 4};
        sf_meta_kv meta[1] = {{"format", "spirefleet-outputs"}};
        rc = sf_tensorfile_write(path, meta, 1, t, 5, e);
    }
    free(val);
    free(pw);
    free(fc);
    free(pol);
    free(nq);
    return rc;
}

/* Evaluate every position of `ps` in chunks the backend accepts. */
static int eval_all(sf_net *net, const sf_positions *ps, sf_net_out *out, int chunk, sf_err *e) {
    int g = sf_positions_count(ps);
    sf_pos *pos = calloc((size_t)g, sizeof *pos);
    if (!pos)
        return sf_err_set(e, SF_ENOMEM, "out of memory");
    for (int i = 0; i < g; i++)
        pos[i] = sf_positions_get(ps, i);
    int rc = SF_OK;
    for (int i = 0; i < g && rc == SF_OK; i += chunk)
        rc = sf_net_eval(net, pos + i, g - i < chunk ? g - i : chunk, out + i, e);
    free(pos);
    return rc;
}

static int cmd_eval(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b = NULL;
    sf_positions *ps = NULL;
    sf_net *net = NULL;
    sf_net_out *out = NULL;
    int rc = sf_bundle_load(a->pos[0], a->sha, &b, &e);
    if (rc == SF_OK)
        rc = sf_positions_read(a->pos[1], &ps, &e);
    if (rc == SF_OK)
        rc = sf_net_create(b, &a->net, &net, &e);
    if (rc == SF_OK) {
        out = calloc((size_t)sf_positions_count(ps), sizeof *out);
        rc = out ? eval_all(net, ps, out, 1024, &e) : sf_err_set(&e, SF_ENOMEM, "out of memory");
    }
    if (rc == SF_OK)
        rc = write_outputs(a->pos[2], out, sf_positions_count(ps), &e);
    if (rc == SF_OK)
        printf("wrote %d outputs to %s\n", sf_positions_count(ps), a->pos[2]);
    free(out);
    return finish(rc, &e, b, net, ps);
}

/* cuda (at the chosen precision) against cpu on the same positions. */
static int cmd_parity(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b = NULL;
    sf_positions *ps = NULL;
    sf_net *cpu = NULL, *gpu = NULL;
    sf_net_out *oc = NULL, *og = NULL;
    int rc = sf_bundle_load(a->pos[0], a->sha, &b, &e);
    if (rc == SF_OK)
        rc = a->npos > 1 ? sf_positions_read(a->pos[1], &ps, &e)
                         : sf_positions_synthetic(2024, 256, &ps, &e);
    sf_net_opts oc_opts = {0}, og_opts = a->net;
    og_opts.backend = SF_BACKEND_CUDA;
    if (rc == SF_OK)
        rc = sf_net_create(b, &oc_opts, &cpu, &e);
    if (rc == SF_OK)
        rc = sf_net_create(b, &og_opts, &gpu, &e);
    int g = ps ? sf_positions_count(ps) : 0;
    if (rc == SF_OK) {
        oc = calloc((size_t)g, sizeof *oc);
        og = calloc((size_t)g, sizeof *og);
        if (!oc || !og)
            rc = sf_err_set(&e, SF_ENOMEM, "out of memory");
    }
    if (rc == SF_OK)
        rc = eval_all(cpu, ps, oc, g, &e);
    if (rc == SF_OK)
        rc = eval_all(gpu, ps, og, 1024, &e);
    sf_canary_tol tol;
    if (rc == SF_OK) {
        if (a->tolerance > 0) {
            for (int o = 0; o < SF_CANARY_OUTPUTS; o++)
                tol.out[o] = (sf_tol){a->tolerance, 0.0};
        } else if (sf_bundle_canary_tolerance(b, a->net.precision)) {
            tol = *sf_bundle_canary_tolerance(b, a->net.precision);
        } else {
            rc = sf_err_set(&e, SF_EINVAL,
                            "%s has no canary, so no tolerances to hold parity to; give "
                            "--tolerance X",
                            sf_bundle_path(b));
        }
    }
    if (rc == SF_OK) {
        double worst_err = 0, worst_ratio = -1;
        int wi = 0;
        sf_out_cmp worst = {0};
        for (int i = 0; i < g; i++) {
            sf_out_cmp c;
            double r = sf_net_out_compare(&og[i], &oc[i], &tol, &c);
            if (c.max_abs_err > worst_err)
                worst_err = c.max_abs_err;
            if (r > worst_ratio) {
                worst_ratio = r;
                wi = i;
                worst = c;
            }
        }
        int ok = g > 0 && worst_ratio <= 1.0;
        const char *an = sf_bundle_arch(b)->name, *pr = sf_precision_name(a->net.precision);
        const sf_tol *t = &tol.out[worst.head];
        printf("{\"bench\":\"evald.parity_cuda_%s_%s\",\"value\":%.3g,\"unit\":\"max_abs_err\","
               "\"n\":%d,\"median\":%.3g}\n",
               an, pr, worst_err, g, worst_err);
        printf("{\"bench\":\"evald.parity_cuda_%s_%s_of_tolerance\",\"value\":%.3g,\"unit\":"
               "\"ratio\",\"n\":%d,\"median\":%.3g}\n",
               an, pr, worst_ratio, g, worst_ratio);
        printf("parity %s %s: cuda vs cpu over %d positions: max |error| %.3g; nearest its limit: "
               "position %d %s, |error| %.3g = %.2f of limit %.3g (%s%s tolerance of %s: abs %g + "
               "rel %g x |expected|): %s\n",
               an, pr, g, worst_err, wi, worst.where, worst.err, worst_ratio, worst.limit,
               a->tolerance > 0 ? "--tolerance as the " : "the bundle's ", pr,
               sf_canary_output_name(worst.head), t->abs, t->rel, ok ? "ok" : "FAILED");
        rc = ok ? SF_OK : SF_ECORRUPT;
    } else {
        fprintf(stderr, "sf-model: %s\n", e.msg);
    }
    free(oc);
    free(og);
    sf_net_free(cpu);
    sf_net_free(gpu);
    sf_positions_free(ps);
    sf_bundle_free(b);
    return rc == SF_OK ? 0 : 1;
}

/* `count` valid positions of exactly `tokens` tokens and `queries` queries,
 * their contents taken from the synthetic generator. */
static int fixed_positions(int tokens, int queries, int count, sf_positions **out, sf_err *e) {
    sf_positions *syn = NULL;
    int rc = sf_positions_synthetic(99, 8 * count, &syn, e);
    if (rc == SF_OK)
        rc = sf_positions_create(count, out, e);
    sf_feat *f = calloc(1, sizeof *f);
    if (rc == SF_OK && !f)
        rc = sf_err_set(e, SF_ENOMEM, "out of memory");
    for (int i = 0, k = 0; rc == SF_OK && i < count && k < 8 * count; k++) {
        sf_pos s = sf_positions_get(syn, k);
        if (s.n_tokens < tokens)
            continue;
        memset(f, 0, sizeof *f);
        f->n_tokens = tokens;
        f->n_queries = queries;
        memcpy(f->type, s.type, (size_t)tokens);
        memcpy(f->cat, s.cat, sizeof f->cat[0] * (size_t)tokens);
        memcpy(f->cont, s.cont, sizeof f->cont[0] * (size_t)tokens);
        for (int q = 0; q < queries; q++) {
            f->query[q][0] = (uint16_t)((q * 5 + i) % tokens);
            f->query[q][1] = (uint16_t)((q * 3 + 1) % tokens);
            f->qcont[q][0] = 0.25f * (float)q;
        }
        sf_pos p = sf_pos_from_feat(f);
        rc = sf_positions_add(*out, &p, e);
        i++;
    }
    free(f);
    sf_positions_free(syn);
    return rc;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Throughput and latency of sf_net_eval at each batch size. */
static int cmd_bench(const args_t *a) {
    sf_err e = {0};
    sf_bundle *b = NULL;
    sf_net *net = NULL;
    sf_positions *ps = NULL;
    int batches[16], nb = 0, maxb = 0;
    if (!a->batches[0]) {
        fprintf(stderr,
                "sf-model: --batch is empty: expected sizes 1..65536 separated by commas\n");
        return 2;
    }
    for (const char *s = a->batches; *s && nb < 16;) {
        char *end;
        long bv = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || bv < 1 || bv > 65536) {
            fprintf(stderr, "sf-model: --batch %s: expected sizes 1..65536 separated by commas\n",
                    a->batches);
            return 2;
        }
        batches[nb] = (int)bv;
        maxb = batches[nb] > maxb ? batches[nb] : maxb;
        nb++;
        s = strchr(s, ',');
        if (!s)
            break;
        s++;
    }
    sf_net_opts o = a->net;
    o.max_batch = maxb;
    int rc = sf_bundle_load(a->pos[0], a->sha, &b, &e);
    if (rc == SF_OK)
        rc = sf_net_create(b, &o, &net, &e);
    if (rc == SF_OK)
        rc = a->npos > 1     ? sf_positions_read(a->pos[1], &ps, &e)
             : a->tokens > 0 ? fixed_positions(a->tokens, a->queries, 256, &ps, &e)
                             : sf_positions_synthetic(7, 256, &ps, &e);
    sf_pos *pos = calloc((size_t)maxb, sizeof *pos);
    sf_net_out *out = calloc((size_t)maxb, sizeof *out);
    double *lat = calloc(100000, sizeof *lat);
    if (rc == SF_OK && (!pos || !out || !lat))
        rc = sf_err_set(&e, SF_ENOMEM, "out of memory");
    for (int k = 0; rc == SF_OK && k < nb; k++) {
        int n = batches[k];
        for (int i = 0; i < n; i++)
            pos[i] = sf_positions_get(ps, i % sf_positions_count(ps));
        rc = sf_net_eval(net, pos, n, out, &e); /* warm-up */
        int runs = 0;
        uint64_t t0 = sf_now_ns();
        while (rc == SF_OK && runs < 100000 && (runs < 5 || sf_now_ns() - t0 < a->seconds * 1e9)) {
            uint64_t s = sf_now_ns();
            rc = sf_net_eval(net, pos, n, out, &e);
            lat[runs++] = (double)(sf_now_ns() - s) / 1e6;
        }
        if (rc != SF_OK)
            break;
        double total = (double)(sf_now_ns() - t0) / 1e9;
        qsort(lat, (size_t)runs, sizeof *lat, cmp_double);
        double p50 = lat[runs / 2],
               p99 = lat[(int)(runs * 0.99) < runs ? (int)(runs * 0.99) : runs - 1];
        double eps = (double)n * runs / total, flops = 0;
        for (int i = 0; i < n; i++)
            flops += sf_arch_flops(sf_bundle_arch(b), pos[i].n_tokens, pos[i].n_queries);
        flops /= n;
        const char *an = sf_bundle_arch(b)->name;
        const char *bk = sf_backend_name(a->net.backend), *pr = sf_precision_name(a->net.precision);
        printf("{\"bench\":\"evald.%s_%s_%s_evals_per_s_b%d\",\"value\":%.1f,\"unit\":\"evals/s\","
               "\"n\":%d,\"median\":%.1f}\n",
               bk, an, pr, n, eps, runs, n / (p50 / 1e3));
        printf("{\"bench\":\"evald.%s_%s_%s_latency_p50_b%d\",\"value\":%.3f,\"unit\":\"ms\","
               "\"n\":%d,\"median\":%.3f}\n",
               bk, an, pr, n, p50, runs, p50);
        printf("{\"bench\":\"evald.%s_%s_%s_latency_p99_b%d\",\"value\":%.3f,\"unit\":\"ms\","
               "\"n\":%d,\"median\":%.3f}\n",
               bk, an, pr, n, p99, runs, p99);
        printf("{\"bench\":\"evald.%s_%s_%s_gflops_b%d\",\"value\":%.1f,\"unit\":\"GFLOP/s\","
               "\"n\":%d,\"median\":%.1f}\n",
               bk, an, pr, n, eps * flops / 1e9, runs, n / (p50 / 1e3) * flops / 1e9);
        printf("%s %s %s batch %d: %.0f evals/s (%.1f GFLOP/s of matmul), latency p50 %.3f ms, "
               "p99 %.3f ms (%d runs)\n",
               bk, an, pr, n, eps, eps * flops / 1e9, p50, p99, runs);
        fflush(stdout);
    }
    free(pos);
    free(out);
    free(lat);
    return finish(rc, &e, b, net, ps);
}

static int cmd_random(const args_t *a) {
    sf_arch ar;
    if (!a->arch || !a->have_seed)
        return usage();
    if (sf_arch_preset(a->arch, &ar) != SF_OK) {
        fprintf(stderr, "sf-model: --arch %s: expected tiny or base\n", a->arch);
        return 2;
    }
    sf_err e = {0};
    if (sf_bundle_write_random(a->pos[0], &ar, a->seed, a->canary, &e) != SF_OK)
        return fail(&e);
    sf_bundle *b;
    if (sf_bundle_load(a->pos[0], NULL, &b, &e) != SF_OK)
        return fail(&e);
    printf("%s  %s\n", sf_bundle_sha256(b), a->pos[0]);
    sf_bundle_free(b);
    return 0;
}

static int cmd_positions(const args_t *a) {
    if (!a->have_seed || a->count < 1)
        return usage();
    sf_err e = {0};
    sf_positions *ps;
    if (sf_positions_synthetic(a->seed, a->count, &ps, &e) != SF_OK)
        return fail(&e);
    int rc = sf_positions_write(ps, a->pos[0], &e);
    sf_positions_free(ps);
    return rc == SF_OK ? 0 : fail(&e);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage_to(stdout, 0);
    if (argc < 2)
        return usage();
    args_t a;
    if (parse_args(argc - 1, argv + 1, &a) != 0)
        return usage();
    const char *cmd = argv[1];
    const struct {
        const char *name;
        int npos_min, npos_max;
        int (*fn)(const args_t *);
    } cmds[] = {
        {"info", 1, 1, cmd_info},       {"verify", 1, 1, cmd_verify},
        {"eval", 3, 3, cmd_eval},       {"parity", 1, 2, cmd_parity},
        {"emulate", 1, 1, cmd_emulate}, {"bench", 1, 2, cmd_bench},
        {"random", 1, 1, cmd_random},   {"positions", 1, 1, cmd_positions},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(cmd, cmds[i].name) == 0) {
            if (a.npos < cmds[i].npos_min || a.npos > cmds[i].npos_max) {
                if (cmds[i].npos_min == cmds[i].npos_max)
                    fprintf(stderr, "sf-model %s: expected %d file argument%s, got %d\n", cmd,
                            cmds[i].npos_min, cmds[i].npos_min > 1 ? "s" : "", a.npos);
                else
                    fprintf(stderr, "sf-model %s: expected %d to %d file arguments, got %d\n", cmd,
                            cmds[i].npos_min, cmds[i].npos_max, a.npos);
                return usage();
            }
            return cmds[i].fn(&a);
        }
    fprintf(stderr, "sf-model: unknown command '%s'\n", cmd);
    return usage();
}
