/* fold.c - benchmark of constant folding in rules and of the shipped
 * library, one JSON object per line.  Every figure is the median of
 * several runs, with a reference measured in the same run:
 *   fold_small  normalizing (l (f a b) ...) under (f ?a ?b) => (num:+ ?a ?b)
 *               on immediate integers, per call, vs normalizing the same
 *               term with f declared but no rule (the walk alone);
 *   fold_big    the same on 100-bit integers;
 *   canonicalize_lib  (rewrite canonicalize T) with patterns/lib on a
 *               graph of many small redexes, per input node, vs
 *               normalizing T under no rules (the walk and interning).
 * Usage: fold [scale]  (needs $srcdir for the library; default ".")
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

static void die(const char *what, const tg_error *e)
{
    char buf[800];
    fprintf(stderr, "fold: %s: %s\n", what, tg_error_format(e, buf, sizeof buf));
    exit(1);
}

/* A check of the benchmark's own that failed (no library error to show). */
static void fail(const char *what)
{
    fprintf(stderr, "fold: %s\n", what);
    exit(1);
}

static volatile uintptr_t sink;

/* (l (f a0 b0) (f a1 b1) ...): n calls on integers from base up. */
static tg_term *calls(tg_ctx *ctx, long n, const mpz_t base)
{
    tg_term **v = GC_MALLOC((size_t)(n + 1) * sizeof *v);     /* scanned: holds terms */
    tg_term *f = tg_symbol_cstr(ctx, "f");
    mpz_t a;
    mpz_init(a);
    v[0] = tg_symbol_cstr(ctx, "l");
    for (long i = 0; i < n; i++) {
        mpz_add_ui(a, base, (unsigned long)i);
        tg_term *args[2] = {tg_int_mpz(ctx, a), tg_int(ctx, i)};
        v[i + 1] = tg_app(ctx, f, 2, args);
    }
    tg_term *t = tg_list(ctx, (size_t)n + 1, v, NULL);
    mpz_clear(a);
    return t;
}

static void bench_fold(tg_ctx *ctx, const char *name, long n, const mpz_t base)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err), *none = tg_rules_new(ctx, &err);
    const char *src = "(op f (arity 2)) (rule f (f ?a ?b) => (num:+ ?a ?b))";
    if (!rs || !none || tg_rules_load_string(rs, src, strlen(src), NULL, &err) < 0 ||
        tg_rules_load_string(none, src, 16, NULL, &err) < 0)
        die("rules", &err);
    double t[RUNS], r[RUNS];
    for (int k = 0; k < RUNS; k++) {
        mpz_t b;
        mpz_init_set(b, base);
        /* a distinct base per run: nothing memoized */
        mpz_add_ui(b, b, (unsigned long)k * (unsigned long)n * 2);
        tg_term *in = calls(ctx, n, b);
        double t0 = bench_now();
        tg_term *out = tg_normalize(rs, in, 0, &err);
        t[k] = bench_now() - t0;
        if (!out)
            die("normalize", &err);
        sink ^= (uintptr_t)out;
        /* reference: the same walk with f declared but no rule for it */
        t0 = bench_now();
        tg_term *same = tg_normalize(none, in, 0, &err);
        if (!same)
            die("reference", &err);
        if (same != in)
            fail("reference: normalizing under no rules changed the term");
        r[k] = bench_now() - t0;
        mpz_clear(b);
    }
    double mt = bench_median(t, RUNS), mr = bench_median(r, RUNS);
    printf("{\"bench\":\"%s\",\"n\":%ld,\"ns_per_fold\":%.1f,\"ref_ns\":%.1f,\"ratio\":%.2f}\n", name, n,
           mt / (double)n * 1e9, mr / (double)n * 1e9, mt / mr);
}

/* A sum of k small graphs, each with several canonicalize redexes. */
static tg_term *graph(tg_ctx *ctx, long k, tg_error *err)
{
    size_t cap = (size_t)k * 160 + 64, len = 0;
    char *s = malloc(cap);
    len += (size_t)sprintf(s + len, "(add");
    for (long i = 0; i < k; i++)
        len += (size_t)sprintf(s + len,
                               " (mul 1 (neg (neg (exp (log (sigmoid (add 0 (dot (transpose (transpose "
                               "X%ld)) W))))))))",
                               i);
    len += (size_t)sprintf(s + len, ")");
    tg_term *t = tg_read(ctx, s, len, err);
    free(s);
    return t;
}

static void bench_lib(tg_ctx *ctx, long k)
{
    tg_error err;
    const char *sd = getenv("srcdir");
    char path[1024];
    snprintf(path, sizeof path, "%s/patterns/lib/all.rules", sd ? sd : ".");
    tg_rules *rs = tg_rules_new(ctx, &err), *none = tg_rules_new(ctx, &err);
    if (!rs || !none || tg_rules_load_file(rs, path, &err) < 0)
        die("library", &err);
    const char *decl = "(include \"tensor.rules\")";
    char dpath[1100];
    snprintf(dpath, sizeof dpath, "%s/patterns/lib/x.rules", sd ? sd : ".");
    if (tg_rules_load_string(none, decl, strlen(decl), dpath, &err) < 0)
        die("ops", &err);
    tg_term *spec = tg_symbol_cstr(ctx, "canonicalize");
    double t[RUNS], r[RUNS];
    long nodes = 0;
    for (int j = 0; j < RUNS; j++) {
        tg_term *raw = graph(ctx, k + j, &err);     /* a new graph: no memo carried over */
        if (!raw)
            die("graph", &err);
        /* add and mul are assoc / comm: the reference walk is only an
         * identity on the graph in their canonical order, so both runs
         * start from it */
        tg_term *in = tg_normalize(none, raw, 0, &err);
        if (!in)
            die("canonical order", &err);
        nodes = (k + j) * 11 + 1;
        double t0 = bench_now();
        tg_term *out = tg_rewrite(rs, spec, in, &err);
        t[j] = (bench_now() - t0) / (double)nodes;
        if (!out)
            die("rewrite", &err);
        t0 = bench_now();
        tg_term *same = tg_normalize(none, in, 0, &err);
        r[j] = (bench_now() - t0) / (double)nodes;
        if (!same)
            die("reference", &err);
        if (same != in)
            fail("reference: normalizing under no rules changed the canonical graph");
        sink ^= (uintptr_t)out;
    }
    double mt = bench_median(t, RUNS), mr = bench_median(r, RUNS);
    printf("{\"bench\":\"canonicalize_lib\",\"nodes\":%ld,\"ns_per_node\":%.1f,\"ref_ns\":%.1f,"
           "\"ratio\":%.2f}\n",
           nodes, mt * 1e9, mr * 1e9, mt / mr);
    tg_rules_free(rs);
    tg_rules_free(none);
}

int main(int argc, char **argv)
{
    double scale = argc > 1 ? atof(argv[1]) : bench_scale(1);
    long n = (long)(200000 * scale);
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    if (!ctx)
        die("context", &err);
    mpz_t base;
    mpz_init_set_ui(base, 1000);
    bench_fold(ctx, "fold_small", n, base);
    mpz_ui_pow_ui(base, 2, 100);
    bench_fold(ctx, "fold_big", n, base);
    mpz_clear(base);
    bench_lib(ctx, (long)(20000 * scale));
    tg_ctx_free(ctx);   /* its term table is malloc'd: freed, not leaked */
    return 0;
}
