/* rewrite.c - benchmark of the rewriters (equilibrium, walk, sequence
 * under a query), one JSON object per line.
 *
 * Each figure is the median of several runs with a reference measured in
 * the same run: tg_normalize of the same term under the same rules (the
 * machine alone), so the ratio is what the rewriter layer costs on top.
 *   rewrite_small  many rewrites of a small term through a query: the
 *                  per-call work (resolving the rewriter into a plan,
 *                  profile set-up) dominates;
 *   rewrite_large  a few rewrites of a large term: the passes and the
 *                  profile's node counts dominate;
 *   rewrite_prov   rewrite_large with provenance on, against the same
 *                  rewrite with it off.
 * Usage: rewrite [scale] [timing]  (scale 1 = full size; timing: every
 * rewrite with per-rule timing on, tg_rules_set_timing, as the REPL's
 * :profile rewrite needs, to pair against a run without)
 */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 5

/* Forty rules over twenty ops, tagged, in an equilibrium, a walk and a
 * sequence of both. */
static char *rules_text(void)
{
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    len += (size_t)snprintf(s + len, cap - len, "(op neg (arity 1)) (op add (arity 2)) (op mul (arity 2))\n");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(s + len, cap - len, "(op f%d (arity 1))\n", i);
    len += (size_t)snprintf(s + len, cap - len, "(rule neg-neg (neg (neg ?x)) => ?x (tags algebra))\n");
    len += (size_t)snprintf(s + len, cap - len, "(rule add-0 (add ?x 0) => ?x (tags algebra))\n");
    for (int i = 0; i < 20; i++) {
        len += (size_t)snprintf(s + len, cap - len,
                                "(rule f%d-neg (f%d (neg (neg ?x))) => (f%d ?x) (tags t%d))\n", i, i, i, i % 3);
        len += (size_t)snprintf(s + len, cap - len, "(rule f%d-mul (f%d (mul ?x 1)) => (f%d ?x) (tags t%d))\n",
                                i, i, i, i % 3);
    }
    len += (size_t)snprintf(s + len, cap - len, "(equilibrium canon (tags fast) neg-neg add-0");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(s + len, cap - len, " f%d-neg f%d-mul", i, i);
    len += (size_t)snprintf(s + len, cap - len, ")\n(walk once");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(s + len, cap - len, " f%d-mul", i);
    len += (size_t)snprintf(s + len, cap - len, ")\n(sequence pipeline (1 once) (2 canon))\n");
    return s;
}

/* A tree of n leaves: (add L R) over (fI (neg (neg (mul xJ 1)))) leaves. */
static tg_term *term(tg_ctx *ctx, long n, long *k)
{
    /* collector memory: it holds the only pointers to the subtrees */
    tg_term **st = GC_MALLOC((size_t)(n + 1) * sizeof *st);
    long sp = 0;
    tg_term *add = tg_symbol_cstr(ctx, "add"), *neg = tg_symbol_cstr(ctx, "neg");
    tg_term *mul = tg_symbol_cstr(ctx, "mul"), *one = tg_int(ctx, 1);
    for (long i = 0; i < n; i++) {
        char nm[32];
        snprintf(nm, sizeof nm, "x%ld", (*k)++);
        tg_term *a[2] = {tg_symbol_cstr(ctx, nm), one};
        tg_term *x = tg_app(ctx, mul, 2, a);
        x = tg_app(ctx, neg, 1, &x);
        x = tg_app(ctx, neg, 1, &x);
        snprintf(nm, sizeof nm, "f%ld", i % 20);
        x = tg_app(ctx, tg_symbol_cstr(ctx, nm), 1, &x);
        st[sp++] = x;
        /* binary counter: merge equal-sized trees */
        for (long m = i + 1; !(m & 1); m >>= 1) {
            tg_term *two[2] = {st[sp - 2], st[sp - 1]};
            sp -= 2;
            st[sp++] = tg_app(ctx, add, 2, two);
        }
    }
    while (sp > 1) {
        tg_term *two[2] = {st[sp - 2], st[sp - 1]};
        sp -= 2;
        st[sp++] = tg_app(ctx, add, 2, two);
    }
    return st[0];
}

static void bench(const char *name, tg_rules *rs, tg_term *spec, tg_term *t, long reps, int prov)
{
    double v[RUNS], r[RUNS];
    tg_error err;
    for (int run = 0; run < RUNS; run++) {
        double t0 = bench_now();
        for (long i = 0; i < reps; i++)
            if (prov >= 0 ? !tg_rewrite(rs, spec, t, &err) : !tg_normalize(rs, t, 0, &err)) {
                fprintf(stderr, "%s: %s\n", name, err.message);
                exit(1);
            }
        double t1 = bench_now();
        if (prov > 0)
            tg_rules_set_provenance(rs, 0, 0, &err);
        for (long i = 0; i < reps; i++)
            if (prov > 0 ? !tg_rewrite(rs, spec, t, &err) : !tg_normalize(rs, t, 0, &err)) {
                fprintf(stderr, "%s: %s\n", name, err.message);
                exit(1);
            }
        if (prov > 0)
            tg_rules_set_provenance(rs, 1, 0, &err);
        v[run] = (t1 - t0) * 1e3, r[run] = (bench_now() - t1) * 1e3;
    }
    double mv = bench_median(v, RUNS), mr = bench_median(r, RUNS);
    printf("{\"bench\":\"%s\",\"reps\":%ld,\"ms\":%.3f,\"ref\":\"%s\",\"ref_ms\":%.3f,\"ratio\":%.3f}\n", name,
           reps, mv, prov > 0 ? "same rewrite, provenance off" : "tg_normalize", mr, mv / mr);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : bench_scale(1);
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    char *text = rules_text();
    if (!ctx || !rs || !text || tg_rules_load_string(rs, text, strlen(text), NULL, &err) < 0) {
        fprintf(stderr, "set-up: %s\n", err.message);
        return 1;
    }
    free(text);
    if (argc > 2 && !strcmp(argv[2], "timing"))
        tg_rules_set_timing(rs, 1);
    tg_term *spec = tg_read_cstr(ctx, "(query pipeline (include fast t0 t1 t2 algebra) (exclude t2))", &err);
    long k = 0;
    tg_term *small = term(ctx, 4, &k), *large = term(ctx, (long)(100000 * scale), &k);
    bench("rewrite_small", rs, spec, small, (long)(20000 * scale) + 1, 0);
    bench("rewrite_large", rs, spec, large, 3, 0);
    tg_rules_set_provenance(rs, 1, 0, &err);
    bench("rewrite_prov", rs, spec, large, 3, 1);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return 0;
}
