/* logic.c - benchmarks of the logic core, one JSON object per line, on
 * the queries and sizes of ../shared/bench/minikanren (the same relations
 * and inputs as its faster-miniKanren driver; bench/logic-compare.sh runs
 * both in one go and prints the ratios).
 *
 * The run form is compiled once (tg_query_new, timed apart as
 * compile_ms); each repetition times tg_query_run after a full
 * collection, as the faster-miniKanren driver times the query only.  Usage: logic [BENCH SIZE [REPS [BUDGET_MS]]]; no arguments run
 * the standard table.  Needs srcdir (environment) to find logic.rules.
 */
#define GC_THREADS 1
#include <gc/gc.h>

#include "tgrel.h"
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* A growing string. */
typedef struct str {
    char *s;
    size_t n, cap;
} str;

static void add(str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(str *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) {
            fputs("out of memory\n", stderr);
            exit(2);
        }
    }
}

static void iota1(str *b, long n)
{
    add(b, "'(");
    for (long i = 1; i <= n; i++)
        add(b, i > 1 ? " %ld" : "%ld", i);
    add(b, ")");
}

static void build_num(str *b, long n)
{
    add(b, "'(");
    for (int first = 1; n > 0; n /= 2, first = 0)
        add(b, first ? "%ld" : " %ld", n % 2);
    add(b, ")");
}

/* full binary tree of depth d: pairs inside, leaf i (or variable vi) */
static void tree(str *b, int d, long *counter, int vars)
{
    if (d == 0) {
        long i = (*counter)++;
        add(b, vars ? "v%ld" : "%ld", i);
        return;
    }
    add(b, vars ? "(cons " : "(");
    tree(b, d - 1, counter, vars);
    add(b, vars ? " " : " . ");
    tree(b, d - 1, counter, vars);
    add(b, ")");
}

/* The run form of a benchmark (and any definitions it needs first). */
static int prepare(const char *name, long n, str *defs, str *q)
{
    if (!strcmp(name, "noop")) {
        add(q, "(run* (q) (== q %ld))", n);
    } else if (!strcmp(name, "appendo-back")) {
        add(q, "(run* (x y) (appendo x y ");
        iota1(q, n);
        add(q, "))");
    } else if (!strcmp(name, "appendo-fwd")) {
        add(q, "(run* (q) (appendo ");
        iota1(q, n);
        add(q, " ");
        iota1(q, n);
        add(q, " q))");
    } else if (!strcmp(name, "membero-all")) {
        add(q, "(run* (q) (membero q ");
        iota1(q, n);
        add(q, "))");
    } else if (!strcmp(name, "facts-grandparent-conde")) {
        add(defs, "(defrel (parento-c x y) (conde");
        for (long k = 2; k <= n; k++)
            add(defs, " ((== x %ld) (== y %ld))", k / 2, k);
        add(defs, "))");
        add(q, "(run* (x y) (grandparento-c x y))");
    } else if (!strcmp(name, "pluso-split")) {
        add(q, "(run* (x y) (pluso x y ");
        build_num(q, n);
        add(q, "))");
    } else if (!strcmp(name, "mulo-factor")) {
        add(q, "(run* (x y) (*o x y ");
        build_num(q, n);
        add(q, "))");
    } else if (!strcmp(name, "neq-alldiff")) {
        add(q, "(run* (q) (fresh (l) (== q l) (fresh (");
        for (long i = 0; i < n; i++)
            add(q, " v%ld", i);
        add(q, ") (== l (list");
        for (long i = 0; i < n; i++)
            add(q, " v%ld", i);
        add(q, "))) (all-diffo l) (all-membero l ");
        iota1(q, n);
        add(q, ")))");
    } else if (!strcmp(name, "unify-ground")) {
        long c = 0;
        add(q, "(run* (q) (== '");
        tree(q, (int)n, &c, 0);
        c = 0;
        add(q, " '");
        tree(q, (int)n, &c, 0);
        add(q, "))");
    } else if (!strcmp(name, "unify-vars")) {
        long c = 0, leaves = 1L << n;
        add(q, "(run* (q) (fresh (");
        for (long i = 0; i < leaves; i++)
            add(q, " v%ld", i);
        add(q, ") (== ");
        tree(q, (int)n, &c, 1);
        c = 0;
        add(q, " '");
        tree(q, (int)n, &c, 0);
        add(q, ")))");
    } else if (!strcmp(name, "quines")) {
        add(q, "(run %ld (q) (eval-expo q '() q))", n);
    } else {
        return -1;
    }
    return 0;
}

static int count_answer(void *ud, tg_term *t)
{
    (void)t;
    ++*(long *)ud;
    return 0;
}

static void die(const tg_error *err)
{
    char msg[1024];
    fprintf(stderr, "logic: %s\n", tg_error_format(err, msg, sizeof msg));
    exit(1);
}

static void eval_text(tg_env *env, tg_ctx *ctx, const char *text)
{
    tg_error err;
    tg_error_clear(&err);
    tg_reader *r = tg_reader_new(ctx, text, strlen(text), "<bench>", &err);
    tg_term *t;
    int rc;
    if (!r)
        die(&err);
    while ((rc = tg_reader_next(r, &t, &err)) > 0)
        if (tg_eval(env, t, NULL, NULL, NULL, &err) < 0)
            die(&err);
    if (rc < 0)
        die(&err);
    tg_reader_free(r);
}

static void bench(tg_ctx *ctx, const char *rules, const char *name, long n, int reps, double budget)
{
    tg_error err;
    tg_error_clear(&err);
    tg_env *env = tg_env_new(ctx, &err);
    if (!env)
        die(&err);
    eval_text(env, ctx, rules);
    str defs = {0}, q = {0};
    add(&defs, " ");
    if (prepare(name, n, &defs, &q) < 0) {
        fprintf(stderr, "logic: unknown benchmark %s\n", name);
        exit(2);
    }
    eval_text(env, ctx, defs.s);
    tg_term *form = tg_read(ctx, q.s, q.n, &err);
    if (!form)
        die(&err);
    double c0 = bench_now_ms();
    tg_query *query = tg_query_new(env, form, &err);
    double compile_ms = bench_now_ms() - c0;
    if (!query)
        die(&err);
    double times[64], cpus[64], total = 0;
    long answers = 0;
    int k = 0;
    for (; k < reps && k < 64; k++) {
        if (k > 0 && total + times[k - 1] > budget)
            break;
        GC_gcollect();
        answers = 0;
        double c0 = cpu_ms(), t0 = bench_now_ms();
        if (tg_query_run(query, count_answer, &answers, &err) < 0)
            die(&err);
        times[k] = bench_now_ms() - t0;
        cpus[k] = cpu_ms() - c0;
        total += times[k];
    }
    printf("{\"system\": \"tgrel\", \"bench\": \"%s\", \"size\": %ld, \"answers\": %ld, \"times_ms\": [",
           name, n, answers);
    for (int i = 0; i < k; i++)
        printf(i ? ", %.3f" : "%.3f", times[i]);
    printf("], \"cpu_ms\": [");
    for (int i = 0; i < k; i++)
        printf(i ? ", %.3f" : "%.3f", cpus[i]);
    qsort(times, (size_t)k, sizeof *times, bench_cmp_double);
    printf("], \"min_ms\": %.3f, \"median_ms\": %.3f, \"compile_ms\": %.3f}\n", times[0],
           times[k / 2], compile_ms);
    fflush(stdout);
    tg_query_free(query);
    tg_env_free(env);
    free(defs.s);
    free(q.s);
}

static char *slurp_rules(void)
{
    const char *dir = getenv("srcdir");
    char path[4096];
    snprintf(path, sizeof path, "%s/bench/logic.rules", dir ? dir : ".");
    size_t len;
    tg_error err;
    tg_error_clear(&err);
    char *text = tg_slurp_file(path, &len, &err);
    if (!text)
        die(&err);
    char *s = malloc(len + 1);
    memcpy(s, text, len);
    s[len] = '\0';
    free(text);
    return s;
}

int main(int argc, char **argv)
{
    static const struct { const char *name; long size; } table[] = {
        {"appendo-back", 1000}, {"appendo-fwd", 10000}, {"membero-all", 10000},
        {"facts-grandparent-conde", 1000}, {"pluso-split", 1024}, {"mulo-factor", 720},
        {"neq-alldiff", 7}, {"unify-ground", 16}, {"unify-vars", 16}, {"quines", 10},
    };
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    if (!ctx)
        die(&err);
    char *rules = slurp_rules();
    if (argc >= 3) {
        int reps = argc > 3 ? atoi(argv[3]) : 5;
        double budget = argc > 4 ? atof(argv[4]) : 60000;
        bench(ctx, rules, argv[1], atol(argv[2]), reps, budget);
    } else {
        for (size_t i = 0; i < sizeof table / sizeof *table; i++)
            bench(ctx, rules, table[i].name, table[i].size, 5, 20000);
    }
    free(rules);
    tg_ctx_free(ctx);
    return 0;
}
