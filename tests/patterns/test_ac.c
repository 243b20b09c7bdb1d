/* test_ac.c - assoc / comm through the API: AC-equal terms are one
 * pointer, wide (10^5 arguments) and deep (10^5 and 10^6 levels) terms
 * are canonicalized and matched, and errors name the file, line and
 * column. */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static tg_term *rd(tg_ctx *ctx, const char *s)
{
    tg_error err;
    return tg_read_cstr(ctx, s, &err);
}

static tg_term *nf(tg_rules *rs, tg_term *t, unsigned flags)
{
    tg_error err;
    tg_term *r = tg_normalize(rs, t, flags, &err);
    if (!r)
        TAP_DIAG("tg_normalize: %s", err.message);
    return r;
}

static int load(tg_rules *rs, const char *text, const char *file, tg_error *err)
{
    return tg_rules_load_string(rs, text, strlen(text), file, err);
}

/* One pointer for every way of writing an AC-equal term. */
static void test_canonical(tg_ctx *ctx, tg_rules *rs)
{
    tg_term *ab = nf(rs, rd(ctx, "(add a b)"), 0);
    TAP_CHECK(ab && nf(rs, rd(ctx, "(add b a)"), 0) == ab, "(add b a) is (add a b)");
    TAP_CHECK(ab && nf(rs, rd(ctx, "(add a (add b))"), 0) == ab, "(add a (add b)) is (add a b)");
    TAP_CHECK(ab && nf(rs, rd(ctx, "(add (add b) (add a))"), 0) == ab, "so is (add (add b) (add a))");
    TAP_CHECK(ab && nf(rs, rd(ctx, "(add b a)"), TG_NF_MEMO) == ab, "and with memo");
    TAP_CHECK(ab != nf(rs, rd(ctx, "(add a b b)"), 0), "(add a b b) is another term");
    tg_term *in = nf(rs, rd(ctx, "(f (mul (add c b) a))"), 0);
    TAP_EQ_STR(tap_show(in), "(f (mul a (add b c)))", "inside other terms");
    TAP_CHECK(in == nf(rs, rd(ctx, "(f (mul a (add (add c) b)))"), 0), "one pointer inside too");
    /* a trace shows the redex and the instantiated right side canonical,
     * an absorbed group as the application it stands for */
    FILE *tr = tmpfile();
    tg_rules_set_trace(rs, tr, 1);
    TAP_EQ_STR(tap_show(nf(rs, rd(ctx, "(add c 0 b)"), 0)), "(add b c)", "add-zero absorbs (add b c)");
    tg_rules_set_trace(rs, NULL, 0);
    char line[200] = "";
    rewind(tr);
    if (!fgets(line, sizeof line, tr))
        line[0] = 0;
    fclose(tr);
    TAP_EQ_STR(line, "add-zero: (add 0 b c) => (add b c)\n", "the trace line");
    /* a walk rebuilds nodes in canonical form */
    tg_error err;
    TAP_EQ_STR(tap_show(tg_rewrite(rs, rd(ctx, "once"), rd(ctx, "(f (add c (neg (neg b)) a))"), &err)),
               "(f (add a b c))", "a walk's rebuilt node is sorted");
}

/* (add n-1 ... 1 0): built in reverse order, n arguments. */
static tg_term *wide(tg_ctx *ctx, tg_term *head, long n, tg_term *extra)
{
    tg_term **a = malloc((size_t)(n + 1) * sizeof *a);
    for (long i = 0; i < n; i++)
        a[i] = tg_int(ctx, n - 1 - i);
    if (extra)
        a[n] = extra;
    tg_term *t = tg_app(ctx, head, (size_t)(n + (extra != NULL)), a);
    free(a);
    return t;
}

static int sorted_ints(const tg_term *t, long n)
{
    if (!t || tg_length(t) != (size_t)n + 1)
        return 0;
    tg_iter it;
    tg_iter_init(&it, t);
    tg_iter_next(&it);
    long i = 0;
    for (tg_term *x; (x = tg_iter_next(&it)); i++) {
        int64_t v;
        if (tg_int_get(x, &v) < 0 || v != i)
            return 0;
    }
    return i == n;
}

static void test_wide(tg_ctx *ctx, tg_rules *rs)
{
    const long n = 100000;
    tg_term *add = tg_symbol_cstr(ctx, "add"), *mul = tg_symbol_cstr(ctx, "mul");
    tg_term *t = nf(rs, wide(ctx, mul, n, NULL), 0);
    TAP_CHECK(sorted_ints(t, n), "10^5 arguments sorted");
    tg_term *half[2];
    half[0] = wide(ctx, mul, n / 2, NULL);
    half[1] = tg_app(ctx, mul, 1, (tg_term *[]){tg_int(ctx, n)});
    TAP_CHECK(nf(rs, tg_app(ctx, mul, 2, half), 0) == nf(rs, wide(ctx, mul, n / 2, tg_int(ctx, n)), 0),
              "a wide nested application spliced in");
    /* (add 99999 ... 0 (neg 500)): the cancelling rule finds 500 among
     * 10^5 arguments, the rest absorbed by add-zero's ?x */
    tg_term *neg = tg_app(ctx, tg_symbol_cstr(ctx, "neg"), 1, (tg_term *[]){tg_int(ctx, 500)});
    tg_term *r = nf(rs, wide(ctx, add, n, neg), 0);
    int ok = r && tg_length(r) == (size_t)n - 1;
    tg_iter it;
    tg_iter_init(&it, r);
    tg_iter_next(&it);
    for (long i = 1; ok && i < n; i++) {
        int64_t v;
        if (i != 500)
            ok = tg_int_get(tg_iter_next(&it), &v) == 0 && v == i;
    }
    TAP_CHECK(ok, "cancelling in 10^5 arguments: (add 1 ... 99999) without 500 (%s...)", tap_show(tg_car(r)));
}

static void test_deep(tg_ctx *ctx, tg_rules *rs)
{
    /* (mul 0 (mul 1 (mul 2 ...))) 10^5 deep: one flat application */
    const long n = 100000;
    tg_term *add = tg_symbol_cstr(ctx, "add"), *mul = tg_symbol_cstr(ctx, "mul");
    tg_term *t = tg_int(ctx, n - 1);
    for (long i = n - 2; i >= 0; i--)
        t = tg_app(ctx, mul, 2, (tg_term *[]){tg_int(ctx, i), t});
    TAP_CHECK(sorted_ints(nf(rs, t, 0), n), "a chain 10^5 deep flattened");
    /* (f (add z (f (add z ... (f q))))) 10^6 deep, add of two arguments
     * sorted at every level: z < (f ...) */
    tg_term *f = tg_symbol_cstr(ctx, "f"), *z = tg_symbol_cstr(ctx, "z");
    tg_term *u = tg_app(ctx, f, 1, (tg_term *[]){tg_symbol_cstr(ctx, "q")}), *e = u;
    for (long i = 0; i < 1000000; i++) {
        u = tg_app(ctx, f, 1, (tg_term *[]){tg_app(ctx, add, 2, (tg_term *[]){u, z})});
        e = tg_app(ctx, f, 1, (tg_term *[]){tg_app(ctx, add, 2, (tg_term *[]){z, e})});
    }
    TAP_CHECK(nf(rs, u, 0) == e, "10^6 deep, sorted at every level");
    /* (dneg (add (dneg (add ... q a) a) a)): cancel-a, (add a (dneg ?x))
     * => ?x, at every level but the innermost */
    tg_term *neg = tg_symbol_cstr(ctx, "dneg"), *a = tg_symbol_cstr(ctx, "a");
    tg_term *v = tg_symbol_cstr(ctx, "q");
    for (long i = 0; i < n; i++)
        v = tg_app(ctx, neg, 1, (tg_term *[]){tg_app(ctx, add, 2, (tg_term *[]){v, a})});
    TAP_EQ_STR(tap_show(nf(rs, v, 0)), "(dneg (add a q))", "10^5 nested AC matches");
}

static void test_errors(tg_ctx *ctx, tg_rules *rs)
{
    tg_error err;
    char buf[600];
    const char *bad = "(op h (arity 1))\n(rule r1 (h ?x) => ?x)\n(rule r2 (h (add ?x\n   (add ?y . ?r))) => ?x)\n";
    TAP_EQ_INT(load(rs, bad, "bad-ac.rules", &err), -1, "a segment inside the same assoc op");
    tg_error_format(&err, buf, sizeof buf);
    TAP_EQ_STR(buf, "bad-ac.rules:4:4: a segment inside a pattern of the same associative op in (add ?y . ?r)",
               "its message names the subpattern");
    TAP_CHECK(nf(rs, rd(ctx, "(h 1)"), 0) == rd(ctx, "(h 1)"), "nothing of the file stayed loaded");
    const char *blow = "(op blow (arity 1))\n  (rule blow-up (blow (add ?x ?x ?y)) => ?y)\n";
    TAP_EQ_INT(load(rs, blow, "blow.rules", &err), 0, "a rule that can take exponential time");
    tg_term *args[30];
    for (int i = 0; i < 30; i++)
        args[i] = tg_int(ctx, i);
    tg_term *t = tg_app(ctx, tg_symbol_cstr(ctx, "blow"), 1,
                        (tg_term *[]){tg_app(ctx, tg_symbol_cstr(ctx, "add"), 30, args)});
    TAP_CHECK(tg_normalize(rs, t, 0, &err) == NULL, "stopped by the bound");
    tg_error_format(&err, buf, sizeof buf);
    TAP_EQ_STR(buf,
               "blow.rules:2:3: matching rule blow-up modulo assoc / comm tried more than 1000000 "
               "alternatives: stopped",
               "the bound's error names the rule");
    TAP_EQ_STR(tap_show(nf(rs, rd(ctx, "(blow (add 7 5 5))"), 0)), "7",
               "the bound is per match: the next one goes on");
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *rules =
        "(op add (arity 1+) assoc comm) (op mul (arity 1+) assoc comm) (op neg (arity 1))\n"
        "(op f (arity 1)) (op dneg (arity 1))\n"
        "(rule add-inverse (add ?x (neg ?x) . ?r) => (add 0 . ?r))\n"
        "(rule add-zero (add 0 ?x) => ?x)\n"
        "(rule neg-neg (neg (neg ?x)) => ?x)\n"
        "(rule cancel-a (add a (dneg ?x)) => ?x)\n"
        "(walk once neg-neg)\n";
    TAP_EQ_INT(load(rs, rules, "ac.rules", &err), 0, "load the AC rules");
    test_canonical(ctx, rs);
    test_wide(ctx, rs);
    test_deep(ctx, rs);
    test_errors(ctx, rs);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
