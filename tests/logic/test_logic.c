/* test_logic.c - the logic core through the C API: evaluating forms,
 * tg_run and prepared queries, errors that leave the environment usable,
 * the occurs check switch, streaming answers with early stop, and terms
 * nested 10^6 deep through unify, walk* and reify (no recursion), and
 * relations written in C (tg_defrel_c, tg_env_var) with their errors.
 *
 * TG_TEST_DEPTH sets the depth of the deep tests (default 10^6). */
#include "harness.h"
#include "tgrel.h"

static tg_ctx *ctx;
static tg_env *env;

static tg_term *rd(const char *s)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, s, &err);
    if (!t)
        tap_diag("read error in %s: %s", s, err.message);
    return t;
}

/* Evaluate s; returns the printed answer list of a run (malloc'd), or
 * "" for a definition, or "!error MESSAGE". */
static char *ev(const char *s)
{
    tg_error err;
    tg_error_clear(&err);
    tg_term *form = rd(s);
    if (!form)
        return strdup("!read");
    tg_term *h = tg_car(form);
    size_t n;
    const char *name = h ? tg_symbol_name(h, &n) : NULL;
    if (name && (!strcmp(name, "run") || !strcmp(name, "run*"))) {
        tg_term *l = tg_run(env, form, &err);
        if (!l) {
            char *m = malloc(strlen(err.message) + 8);
            sprintf(m, "!error %s", err.message);
            return m;
        }
        return tg_print(l, NULL);
    }
    if (tg_eval(env, form, NULL, NULL, NULL, &err) < 0) {
        char *m = malloc(strlen(err.message) + 8);
        sprintf(m, "!error %s", err.message);
        return m;
    }
    return strdup("");
}

static void check_eval(const char *s, const char *want)
{
    char *got = ev(s);
    TAP_EQ_STR(got, want, s);
    free(got);
}

static void test_basics(void)
{
    check_eval("(run* (q) (== q 'a))", "(a)");
    check_eval("(run 2 (q) (membero q '(x y z)))", "(x y)");
    check_eval("(run* (x y) (appendo x y '(1 2)))", "((() (1 2)) ((1) (2)) ((1 2) ()))");
    check_eval("(run* (q) (pluso '(1 1) '(1) q))", "((0 0 1))");
    check_eval("(run* (q) (*o '(1 1) '(1 1) q))", "((1 0 0 1))");
    check_eval("(run* (q) (fresh (r) (/o '(1 1 1) '(0 1) q r)))", "((1 1))");
    check_eval("(run 1 (q) (=/= q 1) (symbolo q))", "((_.0 (sym _.0)))");
}

static void test_errors(void)
{
    check_eval("(run* (q) (== q x))", "!error unbound variable x");
    check_eval("(run* (q) (nosuch q))", "!error undefined relation nosuch");
    check_eval("(run* (q) (appendo q))", "!error appendo takes 3 arguments, called with 1");
    check_eval("(run -1 (q) (== q 1))", "!error run needs a non-negative integer count, not -1");
    check_eval("(defrel (f x))", "!error defrel needs (defrel (name arg ...) goal ...): (defrel (f x))");
    check_eval("(run* (q) (conde))", "!error conde needs at least one clause");
    check_eval("(run* (q) (== q))", "!error == takes 2 arguments: (== q)");
    check_eval("(run* (q) 5)", "!error not a goal: 5");
    /* the environment still works after errors */
    check_eval("(run* (q) (== q 1))", "(1)");
    /* a failed redefinition keeps the old relation */
    check_eval("(defrel (one x) (== x 1))", "");
    check_eval("(defrel (one x) (== x y))", "!error unbound variable y");
    check_eval("(run* (q) (one q))", "(1)");
}

static void test_occurs(void)
{
    check_eval("(run* (q) (fresh (x) (== x (list x))))", "()");
    tg_env_set_occurs_check(env, 0);
    check_eval("(run* (q) (fresh (x) (== x (list 1 2))))", "(_.0)");
    tg_env_set_occurs_check(env, 1);
}

typedef struct counter {
    long n, stop;
} counter;

static int count(void *ud, tg_term *t)
{
    counter *c = ud;
    (void)t;
    return ++c->n == c->stop;
}

static void test_queries(void)
{
    tg_error err;
    tg_query *q = tg_query_new(env, rd("(run* (x y) (appendo x y '(1 2 3 4 5 6 7 8 9)))"), &err);
    TAP_CHECK(q != NULL, "a run form compiles to a query");
    for (int i = 0; i < 3; i++) {
        counter c = {0, -1};
        long r = tg_query_run(q, count, &c, &err);
        TAP_EQ_INT(r, 10, "a query runs again and again");
        TAP_EQ_INT(c.n, 10, "each answer reaches the callback");
    }
    tg_query_free(q);
    /* an infinite run* stops when the callback says so */
    check_eval("(defrel (nato n) (conde ((== n 'z)) ((fresh (m) (== n (list 's m)) (nato m)))))", "");
    counter c = {0, 1000};
    tg_term *form = rd("(run* (q) (nato q))");
    TAP_EQ_INT(tg_eval(env, form, count, &c, NULL, &err), TG_EVAL_RUN, "an endless run* evaluates");
    TAP_EQ_INT(c.n, 1000, "it stops after the callback asks for it");
    TAP_CHECK(tg_query_new(env, rd("(defrel (g) succeed)"), &err) == NULL,
              "tg_query_new rejects a form that is not a run");
    tg_term *v = NULL;
    TAP_EQ_INT(tg_eval(env, rd("(f x)"), NULL, NULL, &v, &err), TG_EVAL_VALUE, "other terms are values");
    TAP_CHECK(v == rd("(f x)"), "a value is the term itself");
}

static long depth(void)
{
    const char *s = getenv("TG_TEST_DEPTH");
    return s ? atol(s) : 1000000L;
}

/* (s (s ... z)) nested n deep */
static tg_term *peano(long n)
{
    tg_term *t = tg_symbol_cstr(ctx, "z"), *s = tg_symbol_cstr(ctx, "s");
    for (long i = 0; i < n; i++) {
        tg_term *a[1] = {t};
        t = tg_app(ctx, s, 1, a);
    }
    return t;
}

static tg_term *quoted(tg_term *t)
{
    tg_term *a[1] = {t};
    return tg_app(ctx, tg_symbol_cstr(ctx, "quote"), 1, a);
}

/* (betweeno lo hi x): the integers lo..hi; lo and hi must be ground. */
static int betweeno(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i,
                    void **state, tg_term **answer, void *ud, tg_error *err)
{
    (void)nargs, (void)state, (void)ud;
    int64_t lo, hi;
    if (tg_int_get(args[0], &lo) < 0 || tg_int_get(args[1], &hi) < 0) {
        tg_error_set(err, TG_ERR_ARG, "betweeno needs integer bounds");
        return -1;
    }
    if (lo + (int64_t)i > hi)
        return 0;
    tg_term *v[3] = {args[0], args[1], tg_int(c, lo + (int64_t)i)};
    *answer = tg_list(c, 3, v, NULL);
    return 1;
}

/* (pairvo p): p is (x x) for a new variable x, made with tg_env_var. */
static int pairvo(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i,
                  void **state, tg_term **answer, void *ud, tg_error *err)
{
    (void)args, (void)nargs, (void)state, (void)err;
    if (i > 0)
        return 0;
    tg_term *x = tg_env_var(ud, "x"), *v[2] = {x, x}, *p = tg_list(c, 2, v, NULL);
    *answer = tg_list(c, 1, &p, NULL);
    return 1;
}

/* A badly behaved relation: answers that are not argument lists, or -1
 * without a message. */
static int badrel(tg_ctx *c, tg_term *const *args, unsigned nargs, unsigned long i,
                  void **state, tg_term **answer, void *ud, tg_error *err)
{
    (void)c, (void)args, (void)nargs, (void)i, (void)state, (void)err;
    if (ud)
        return -1;
    *answer = tg_nil();
    return 1;
}

static void test_crel(void)
{
    tg_error err;
    TAP_CHECK(tg_defrel_c(env, "betweeno", 3, betweeno, NULL, &err) == 0, "tg_defrel_c defines a relation");
    check_eval("(run* (q) (betweeno 1 4 q))", "(1 2 3 4)");
    check_eval("(run* (q) (betweeno 1 4 3))", "(_.0)");
    check_eval("(run* (q) (betweeno 1 4 q) (=/= q 2) (=/= q 3))", "(1 4)");
    check_eval("(run 2 (q) (fresh (a b) (betweeno 1 3 a) (betweeno a 3 b) (== q (list a b))))",
               "((1 1) (1 2))");
    check_eval("(run* (q) (mapo (lambda (x y) (betweeno x x y)) '(5 6) q))", "((5 6))");
    check_eval("(run* (q) (betweeno 'a 4 q))", "!error betweeno needs integer bounds");
    check_eval("(run* (q) (betweeno 1 q))", "!error betweeno takes 3 arguments, called with 2");
    TAP_CHECK(tg_defrel_c(env, "pairvo", 1, pairvo, env, &err) == 0, "a relation that makes variables");
    check_eval("(run* (q) (pairvo q))", "((_.0 _.0))");
    check_eval("(run* (q) (fresh (a) (pairvo `(,a 1)) (== q a)))", "(1)");
    tg_defrel_c(env, "badshape", 1, badrel, NULL, &err);
    check_eval("(run* (q) (badshape q))",
               "!error relation badshape gave an answer that is not a list of 1 terms");
    tg_defrel_c(env, "badfail", 1, badrel, env, &err);
    check_eval("(run* (q) (badfail q))", "!error relation badfail failed");
    TAP_CHECK(tg_defrel_c(env, NULL, 1, badrel, NULL, &err) == -1 && err.code == TG_ERR_ARG,
              "tg_defrel_c rejects a NULL name");
    TAP_CHECK(tg_defrel_c(env, "x", 1, NULL, NULL, &err) == -1, "tg_defrel_c rejects a NULL function");
    /* a defrel replaces a C relation of the same name, and back */
    check_eval("(defrel (betweeno a b c) (== c 'defined))", "");
    check_eval("(run* (q) (betweeno 1 2 q))", "(defined)");
    check_eval("(run* (q) (badfail q) (== q 1))", "!error relation badfail failed");
}

static void test_deep(void)
{
    long n = depth();
    tg_error err;
    tg_term *deep = peano(n);
    check_eval("(defrel (copyo a b) (conde ((== a 'z) (== b 'z))"
               " ((fresh (x y) (== a (list 's x)) (== b (list 's y)) (copyo x y)))))", "");
    /* (run 1 (q) (copyo DEEP q)): q is a chain of n bindings to reify */
    tg_term *f[4] = {tg_symbol_cstr(ctx, "run"), tg_int(ctx, 1), rd("(q)"), NULL};
    tg_term *g[3] = {tg_symbol_cstr(ctx, "copyo"), quoted(deep), tg_symbol_cstr(ctx, "q")};
    f[3] = tg_list(ctx, 3, g, NULL);
    tg_term *l = tg_run(env, tg_list(ctx, 4, f, NULL), &err);
    TAP_CHECK(l && tg_car(l) == deep, "reify a term built from %ld nested bindings", n);
    /* two deep non-ground terms unify (and the occurs check walks them) */
    tg_term *h[4] = {tg_symbol_cstr(ctx, "run"), tg_int(ctx, 1), rd("(q)"), NULL};
    char buf[200];
    snprintf(buf, sizeof buf, "(fresh (a b) (copyo D a) (copyo D b) (== a b) (== q (list a)))");
    tg_term *body = rd(buf);
    /* put the deep term in place of D */
    tg_term *dq = quoted(deep);
    tg_term *a1[3] = {tg_symbol_cstr(ctx, "copyo"), dq, tg_symbol_cstr(ctx, "a")};
    tg_term *b1[3] = {tg_symbol_cstr(ctx, "copyo"), dq, tg_symbol_cstr(ctx, "b")};
    tg_term *parts[6] = {tg_symbol_cstr(ctx, "fresh"), rd("(a b)"), tg_list(ctx, 3, a1, NULL),
                         tg_list(ctx, 3, b1, NULL), rd("(== a b)"), rd("(== q a)")};
    (void)body;
    h[3] = tg_list(ctx, 6, parts, NULL);
    l = tg_run(env, tg_list(ctx, 4, h, NULL), &err);
    TAP_CHECK(l && tg_car(l) == deep, "unify two terms %ld deep made of bindings", n);
    /* ground deep terms: pointer comparison */
    tg_term *k[4] = {tg_symbol_cstr(ctx, "run*"), rd("(q)"), NULL, NULL};
    tg_term *u[3] = {tg_symbol_cstr(ctx, "=="), dq, dq};
    k[2] = tg_list(ctx, 3, u, NULL);
    l = tg_run(env, tg_list(ctx, 3, k, NULL), &err);
    TAP_CHECK(l && tg_length(l) == 1, "unify two ground terms %ld deep", n);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    env = tg_env_new(ctx, &err);
    TAP_CHECK(env != NULL, "a logic environment (with its prelude) is created");
    test_basics();
    test_errors();
    test_occurs();
    test_queries();
    test_crel();
    test_deep();
    tg_env_free(env);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
