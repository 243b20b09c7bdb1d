/* test_relrw.c - relations as rewrites through the API: errors at the
 * offending item or condition with file:line:column, all-or-nothing
 * loads, a relation defined after the rewriter in the same file, a
 * relation redefined with another arity, the round trip of the
 * distribution of dot over a sum of 1000 terms, and terms a million
 * deep (no C recursion). */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static int load(tg_rules *rs, const char *text, tg_error *err)
{
    return tg_rules_load_string(rs, text, strlen(text), "f.rules", err);
}

static tg_term *rw(tg_ctx *ctx, tg_rules *rs, const char *spec, tg_term *t, tg_error *err)
{
    tg_term *s = tg_read_cstr(ctx, spec, err);
    return s ? tg_rewrite(rs, s, t, err) : NULL;
}

static tg_term *rd(tg_ctx *ctx, const char *text)
{
    tg_error err;
    return tg_read_cstr(ctx, text, &err);
}

/* C relations used as rewrites (called directly when they answer with
 * the given term and a ground one, through the search otherwise): ud
 * says how this one answers (twice) a. */
static tg_env *c_env;

static int c_rel(tg_ctx *ctx, tg_term *const *args, unsigned nargs, unsigned long i, void **state,
                 tg_term **answer, void *ud, tg_error *err)
{
    (void)nargs, (void)state;
    const char *how = ud;
    tg_term *t = args[0];
    if (i > 0 || tg_kind_of(t) != TG_PAIR || tg_car(t) != tg_symbol_cstr(ctx, "twice"))
        return 0;
    tg_term *x = tg_nth(t, 1);
    tg_term *v[2] = {t, NULL};
    if (!strcmp(how, "ground")) {
        tg_term *p[2] = {x, x};
        v[1] = tg_app(ctx, tg_symbol_cstr(ctx, "pair"), 2, p);
    } else if (!strcmp(how, "loose")) {
        v[1] = args[1];    /* the unknown itself: not ground */
    } else if (!strcmp(how, "unify")) {  /* (twice ?y) unified with the term */
        tg_term *y = tg_env_var(c_env, "y");
        tg_term *w = tg_list(ctx, 1, &y, NULL);
        v[0] = tg_cons(ctx, tg_symbol_cstr(ctx, "twice"), w);
        v[1] = tg_cons(ctx, tg_symbol_cstr(ctx, "got"), w);
    } else {
        tg_error_set(err, TG_ERR_ARG, "cannot double %s", "that");
        return -1;
    }
    *answer = tg_list(ctx, 2, v, NULL);
    return 1;
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(rs != NULL, "a rule set");

    /* the relation may come after the rewriter in the same file */
    const char *ok = "(op dot (arity 2)) (op add (arity 1+))\n"
                     "(equilibrium distribute dot-distribute)\n"
                     "(equilibrium gather (reverse dot-distribute))\n"
                     "(defrel (dot-distribute in out)\n"
                     "  (fresh (A terms dots)\n"
                     "    (== in `(dot ,A (add . ,terms)))\n"
                     "    (== out `(add . ,dots))\n"
                     "    (mapo (lambda (t d) (== d `(dot ,A ,t))) terms dots)))\n";
    TAP_EQ_INT(load(rs, ok, &err), 0, "relation defined after its rewriters");
    TAP_EQ_STR(tap_show(rw(ctx, rs, "distribute", rd(ctx, "(dot A (add x y))"), &err)),
               "(add (dot A x) (dot A y))", "it rewrites");

    /* relations written in C: a ground answer is taken as it is; an
     * answer the search must unify, or that is not ground, and errors go
     * through the search as for any relation */
    tg_env *env = c_env = tg_rules_env(rs, &err);
    static const char *const hows[] = {"ground", "loose", "unify", "fail"};
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "c-%s", hows[i]);
        TAP_EQ_INT(tg_defrel_c(env, name, 2, c_rel, (void *)hows[i], &err), 0, "a C relation");
    }
    const char *cdefs = "(op twice (arity 1))\n(equilibrium cg c-ground)\n(equilibrium cl c-loose)\n"
                        "(equilibrium cu c-unify)\n(equilibrium cf c-fail)\n(walk cb (reverse c-ground))\n";
    TAP_EQ_INT(load(rs, cdefs, &err), 0, "C relations as items");
    TAP_EQ_STR(tap_show(rw(ctx, rs, "cg", rd(ctx, "(list (twice a) (twice (twice b)) (thrice c))"), &err)),
               "(list (pair a a) (pair (pair b b) (pair b b)) (thrice c))", "a C relation rewrites, innermost");
    TAP_CHECK(rw(ctx, rs, "cl", rd(ctx, "(twice a)"), &err) == NULL &&
                  strstr(tap_msg(&err), "rewrites (twice a) to") && strstr(tap_msg(&err), "which is not ground"),
              "an answer with a variable: %s", tap_msg(&err));
    TAP_EQ_STR(tap_show(rw(ctx, rs, "cu", rd(ctx, "(twice a)"), &err)), "(got a)",
               "an answer to unify with the term");
    TAP_CHECK(rw(ctx, rs, "cf", rd(ctx, "(twice a)"), &err) == NULL && strstr(tap_msg(&err), "c-fail") &&
                  strstr(tap_msg(&err), "cannot double that"),
              "an error names the relation: %s", tap_msg(&err));
    TAP_EQ_STR(tap_show(rw(ctx, rs, "cb", rd(ctx, "(pair a a)"), &err)), "(pair a a)",
               "backward: the C relation has no answer for an unknown first argument");

    /* errors name the offending item or condition; nothing stays */
    const char *bad = "(op f (arity 1))\n"
                      "(rule f-id (f ?x) => ?x)\n"
                      "(walk w f-id\n"
                      "   (reverse appendo))\n";
    TAP_EQ_INT(load(rs, bad, &err), -1, "a relation of three arguments as an item");
    TAP_EQ_STR(tap_msg(&err), "f.rules:4:4: relation appendo takes 3 arguments: a rewrite needs a relation of 2",
               "at the item");
    TAP_CHECK(rw(ctx, rs, "w", rd(ctx, "(f a)"), &err) == NULL, "the walk is gone");
    TAP_EQ_INT(load(rs, "(op f (arity 2))", &err), 0, "and so is the op (declared again differently)");

    const char *bad2 = "(op g (arity 1))\n"
                       "(rule g-half (g ?l) => ?a\n"
                       "  (when (symbol? ?l))\n"
                       "  (when (not (nil? ?l)) (halveso ?l ?a)))\n"
                       "(walk w2 nothing-here)\n";
    TAP_EQ_INT(load(rs, bad2, &err), -1, "an unknown relation as a condition");
    TAP_EQ_STR(tap_msg(&err), "f.rules:4:25: unknown condition or relation halveso (define it with defrel) "
               "in (halveso ?l ?a)", "at the condition");
    const char *bad3 = "(op g (arity 1))\n"
                       "(walk w2\n"
                       "  nothing-here)\n";
    TAP_EQ_INT(load(rs, bad3, &err), -1, "an unknown item");
    TAP_EQ_STR(tap_msg(&err), "f.rules:3:3: unknown rule, rewriter or relation nothing-here", "at the item");

    /* a condition's template nested deeper than its limit (it is built
     * recursively) is refused, even after an unbound variable */
    TAP_EQ_INT(load(rs, "(op deepf (arity 1))", &err), 0, "deepf");
    tg_term *wrap = tg_symbol_cstr(ctx, "w");
    tg_term *qv = tg_var(ctx, "q", 1, 0), *lv = tg_var(ctx, "l", 1, 0);
    tg_term *vdeep = tg_var(ctx, "d", 1, 0);
    for (int i = 0; i < 100000; i++)
        vdeep = tg_app(ctx, wrap, 1, &vdeep);
    tg_term *targ[2] = {qv, vdeep};
    tg_term *call[3] = {tg_symbol_cstr(ctx, "membero"), tg_list(ctx, 2, targ, NULL), lv};
    tg_term *when[2] = {tg_symbol_cstr(ctx, "when"), tg_list(ctx, 3, call, NULL)};
    tg_term *lhs[2] = {tg_symbol_cstr(ctx, "deepf"), lv};
    tg_term *rule[6] = {tg_symbol_cstr(ctx, "rule"), tg_symbol_cstr(ctx, "deep-cond"),
                        tg_list(ctx, 2, lhs, NULL), tg_symbol_cstr(ctx, "=>"), qv,
                        tg_list(ctx, 2, when, NULL)};
    tg_term *rf = tg_list(ctx, 6, rule, NULL);
    TAP_EQ_INT(tg_rules_eval_at(rs, rf, "d.rules", 1, 1, NULL, NULL, NULL, &err), -1,
               "a template 10^5 deep");
    TAP_CHECK(strstr(err.message, "argument of a relation condition nested too deeply") != NULL,
              "message: %.80s", err.message);

    /* a relation redefined with another arity: running the rewriter says so */
    TAP_EQ_INT(load(rs, "(defrel (two a b) (== a b)) (walk by-two two)", &err), 0, "two");
    TAP_EQ_INT(load(rs, "(defrel (two a b c) (== a b))", &err), 0, "two again, with three arguments");
    TAP_CHECK(rw(ctx, rs, "by-two", rd(ctx, "(f a)"), &err) == NULL, "by-two fails");
    TAP_EQ_STR(err.message, "relation two takes 3 arguments: a rewrite needs a relation of 2", "its message");

    /* the round trip over a sum of 1000 terms */
    tg_term *dot = tg_symbol_cstr(ctx, "dot"), *add = tg_symbol_cstr(ctx, "add");
    tg_term *a = tg_symbol_cstr(ctx, "A");
    tg_term *ts[1000], *ds[1000];
    for (int i = 0; i < 1000; i++) {
        tg_term *two[2] = {a, tg_int(ctx, i)};
        ts[i] = two[1];
        ds[i] = tg_app(ctx, dot, 2, two);
    }
    tg_term *two[2] = {a, tg_app(ctx, add, 1000, ts)};
    tg_term *in = tg_app(ctx, dot, 2, two), *out = tg_app(ctx, add, 1000, ds);
    TAP_CHECK(rw(ctx, rs, "distribute", in, &err) == out, "1000 terms distributed");
    TAP_CHECK(rw(ctx, rs, "gather", out, &err) == in, "and gathered back");

    /* a million deep: (g (g ... z)) -> (h (h ... z)) by a relation */
    const char *deep = "(defrel (g-h in out) (fresh (x) (== in `(g ,x)) (== out `(h ,x))))\n"
                       "(equilibrium g-to-h g-h) (walk g-to-h-once g-h)";
    TAP_EQ_INT(load(rs, deep, &err), 0, "g-h");
    tg_term *t = tg_symbol_cstr(ctx, "z"), *e = t;
    tg_term *g = tg_symbol_cstr(ctx, "g"), *h = tg_symbol_cstr(ctx, "h");
    for (int i = 0; i < 1000000; i++) {
        t = tg_app(ctx, g, 1, &t);
        e = tg_app(ctx, h, 1, &e);
    }
    TAP_CHECK(rw(ctx, rs, "g-to-h", t, &err) == e, "a million nested relation rewrites (equilibrium)");
    for (int i = 0; i < 900000; i++)   /* the walk is the same code as for rules: 10^5 */
        t = tg_nth(t, 1), e = tg_nth(e, 1);
    TAP_CHECK(rw(ctx, rs, "g-to-h-once", t, &err) == e, "the same in one walk");

    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
