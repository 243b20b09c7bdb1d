/* relrw.c - benchmark of relations used as rewrites, one JSON object per
 * line: the relation dot-distribute of bench/relrw.rules (dot over an add
 * of any arity, one relation with mapo) run by an equilibrium rewriter
 * forwards on (dot A (add t0 ... tN-1)) and backwards ((reverse
 * dot-distribute)) on the distributed sum (shape "flat"), and the same on
 * a sum of two-argument adds nested N deep (shape "nested": N rewrites
 * each way), against hand-written C functions doing the same rewrites
 * over the term API, measured in the same run.  Each figure is the
 * median of REPS runs, each after a full collection, in wall time and in
 * the thread's CPU time (which leaves out the time other jobs of a loaded
 * machine took, but also the wait for the collector's marker threads).
 * Usage: relrw [SIZE [REPS]]; needs srcdir (environment) to find
 * relrw.rules.
 */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, const tg_error *err)
{
    char msg[1024];
    fprintf(stderr, "relrw: %s: %s\n", what, err ? tg_error_format(err, msg, sizeof msg) : "failed");
    exit(1);
}

static tg_term *dot_s, *add_s;

/* The reference: (dot A (add t ...)) -> (add (dot A t) ...) by hand. */
static tg_term *distribute(tg_ctx *ctx, tg_term *t)
{
    if (tg_car(t) != dot_s || tg_length(t) != 3)
        return t;
    tg_term *a = tg_nth(t, 1), *sum = tg_nth(t, 2);
    if (tg_car(sum) != add_s || tg_tail(sum) != tg_nil())
        return t;
    size_t n = tg_length(sum) - 1;
    tg_term **v = GC_MALLOC(n * sizeof *v);
    tg_iter it;
    tg_iter_init(&it, sum);
    tg_iter_next(&it);
    for (size_t i = 0; i < n; i++) {
        tg_term *two[2] = {a, tg_iter_next(&it)};
        v[i] = tg_app(ctx, dot_s, 2, two);
    }
    return tg_app(ctx, add_s, n, v);
}

/* ... and back: (add (dot A t) ...) with one A -> (dot A (add t ...)). */
static tg_term *gather(tg_ctx *ctx, tg_term *t)
{
    if (tg_car(t) != add_s || tg_tail(t) != tg_nil())
        return t;
    size_t n = tg_length(t) - 1;
    tg_term **v = GC_MALLOC((n ? n : 1) * sizeof *v), *a = NULL;
    tg_iter it;
    tg_iter_init(&it, t);
    tg_iter_next(&it);
    for (size_t i = 0; i < n; i++) {
        tg_term *d = tg_iter_next(&it);
        if (tg_car(d) != dot_s || tg_length(d) != 3 || (a && tg_nth(d, 1) != a))
            return t;
        a = tg_nth(d, 1);
        v[i] = tg_nth(d, 2);
    }
    if (!a)
        return t;
    tg_term *two[2] = {a, tg_app(ctx, add_s, n, v)};
    return tg_app(ctx, dot_s, 2, two);
}

/* The reference on nested sums: (dot A (add t0 (add t1 ... (add tn-2 tn-1))))
 * -> (add (dot A t0) (add ... (add (dot A tn-2) (dot A tn-1)))), a loop
 * down the spine. */
static tg_term *distribute_nested(tg_ctx *ctx, tg_term *t)
{
    tg_term *a = tg_nth(t, 1), *s = tg_nth(t, 2);
    size_t n = 0, cap = 64;
    tg_term **v = GC_MALLOC(cap * sizeof *v);
    while (tg_car(s) == add_s && tg_length(s) == 3) {
        if (n == cap)
            v = GC_REALLOC(v, (cap *= 2) * sizeof *v);
        v[n++] = tg_nth(s, 1);
        s = tg_nth(s, 2);
    }
    tg_term *two[2] = {a, s};
    tg_term *acc = tg_app(ctx, dot_s, 2, two);
    while (n--) {
        two[1] = v[n];
        tg_term *d = tg_app(ctx, dot_s, 2, two);
        tg_term *p[2] = {d, acc};
        acc = tg_app(ctx, add_s, 2, p);
    }
    return acc;
}

static tg_term *gather_nested(tg_ctx *ctx, tg_term *t)
{
    size_t n = 0, cap = 64;
    tg_term **v = GC_MALLOC(cap * sizeof *v), *s = t;
    while (tg_car(s) == add_s && tg_length(s) == 3) {
        if (n == cap)
            v = GC_REALLOC(v, (cap *= 2) * sizeof *v);
        v[n++] = tg_nth(tg_nth(s, 1), 2);
        s = tg_nth(s, 2);
    }
    tg_term *a = tg_nth(s, 1), *acc = tg_nth(s, 2);
    while (n--) {
        tg_term *p[2] = {v[n], acc};
        acc = tg_app(ctx, add_s, 2, p);
    }
    tg_term *two[2] = {a, acc};
    return tg_app(ctx, dot_s, 2, two);
}

typedef struct job {
    tg_rules *rs;
    tg_term *spec, *in;
    tg_term *(*ref)(tg_ctx *, tg_term *);
} job;

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void run(tg_ctx *ctx, const char *shape, const char *dir, job *j, tg_term *want, long size,
                int reps)
{
    double *tr = malloc((size_t)reps * sizeof *tr), *tc = malloc((size_t)reps * sizeof *tc);
    double *ur = malloc((size_t)reps * sizeof *ur), *uc = malloc((size_t)reps * sizeof *uc);
    tg_error err;
    unsigned long gcs = 0;
    for (int r = 0; r < reps; r++) {
        GC_gcollect();
        GC_word g0 = GC_get_gc_no();
        double t0 = bench_now_ms(), c0 = bench_thread_cpu_ms();
        tg_term *got = tg_rewrite(j->rs, j->spec, j->in, &err);
        tr[r] = bench_now_ms() - t0;
        ur[r] = bench_thread_cpu_ms() - c0;
        gcs += (unsigned long)(GC_get_gc_no() - g0);
        if (!got)
            die(dir, &err);
        if (got != want) {
            fprintf(stderr, "relrw: %s: wrong result\n", dir);
            exit(1);
        }
        GC_gcollect();
        t0 = bench_now_ms(), c0 = bench_thread_cpu_ms();
        got = j->ref(ctx, j->in);
        tc[r] = bench_now_ms() - t0;
        uc[r] = bench_thread_cpu_ms() - c0;
        if (got != want) {
            fprintf(stderr, "relrw: %s: wrong reference result\n", dir);
            exit(1);
        }
    }
    double mr = median_of(tr, reps), mc = median_of(tc, reps);
    double mur = median_of(ur, reps), muc = median_of(uc, reps);
    printf("{\"bench\": \"dot-distribute\", \"shape\": \"%s\", \"direction\": \"%s\", "
           "\"size\": %ld, \"reps\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, "
           "\"ref\": \"hand-written C over the term API\", \"ref_median_ms\": %.4f, "
           "\"ratio_to_ref\": %.1f, \"median_cpu_ms\": %.3f, \"ref_median_cpu_ms\": %.4f, "
           "\"cpu_ratio_to_ref\": %.1f, \"collections_per_run\": %.1f}\n",
           shape, dir, size, reps, mr, tr[0], mc, mc > 0 ? mr / mc : 0, mur, muc,
           muc > 0 ? mur / muc : 0, (double)gcs / reps);
    free(tr);
    free(tc);
    free(ur);
    free(uc);
}

int main(int argc, char **argv)
{
    GC_INIT();
    long size = argc > 1 ? atol(argv[1]) : bench_size(1000, 10);
    int reps = argc > 2 ? atoi(argv[2]) : bench_reps(11);
    if (size < 1 || reps < 1) {
        fputs("usage: relrw [SIZE [REPS]]\n", stderr);
        return 2;
    }
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = ctx ? tg_rules_new(ctx, &err) : NULL;
    if (!rs)
        die("setup", &err);
    const char *srcdir = getenv("srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench/relrw.rules", srcdir ? srcdir : ".");
    if (tg_rules_load_file(rs, path, &err) < 0)
        die("loading relrw.rules", &err);
    dot_s = tg_symbol_cstr(ctx, "dot");
    add_s = tg_symbol_cstr(ctx, "add");
    tg_term **ts = GC_MALLOC((size_t)size * sizeof *ts);
    for (long i = 0; i < size; i++) {
        char b[32];
        snprintf(b, sizeof b, "t%ld", i);
        ts[i] = tg_symbol_cstr(ctx, b);
    }
    tg_term *two[2] = {tg_symbol_cstr(ctx, "A"), tg_app(ctx, add_s, (size_t)size, ts)};
    tg_term *in = tg_app(ctx, dot_s, 2, two);
    tg_term *out = distribute(ctx, in);
    job fw = {rs, tg_symbol_cstr(ctx, "distribute"), in, distribute};
    job bw = {rs, tg_symbol_cstr(ctx, "gather"), out, gather};
    run(ctx, "flat", "forwards", &fw, out, size, reps);
    run(ctx, "flat", "backwards", &bw, in, size, reps);
    /* nested: (add t0 (add t1 ... (add tn-2 tn-1))) */
    tg_term *sum = ts[size - 1];
    for (long i = size - 1; i-- > 0;) {
        tg_term *p[2] = {ts[i], sum};
        sum = tg_app(ctx, add_s, 2, p);
    }
    two[1] = sum;
    tg_term *nin = tg_app(ctx, dot_s, 2, two);
    tg_term *nout = distribute_nested(ctx, nin);
    job nfw = {rs, fw.spec, nin, distribute_nested};
    job nbw = {rs, bw.spec, nout, gather_nested};
    run(ctx, "nested", "forwards", &nfw, nout, size, reps);
    run(ctx, "nested", "backwards", &nbw, nin, size, reps);
    tg_rules_free(rs);
    tg_ctx_free(ctx);   /* its term table is malloc'd: freed, not leaked */
    return 0;
}
