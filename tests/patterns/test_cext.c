/* test_cext.c - node rewriters and predicates written in C through the
 * public API: x*y/y -> x as a C rewriter and as a rule (same results, same
 * profile counts), C rewriters in walks, equilibria and sequences,
 * queries and tags, traces, nodes created, results reduced at their root,
 * cycles and max-use ratios, errors from callbacks, C predicates in
 * conditions, and the registration errors. */
#include <gc/gc.h>

#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static tg_ctx *ctx;

static tg_term *rd(const char *s)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, s, &err);
    if (!t)
        TAP_DIAG("cannot read %s: %s", s, err.message);
    return t;
}

static tg_term *rewrite(tg_rules *rs, const char *spec, const char *term, tg_error *err)
{
    return tg_rewrite(rs, rd(spec), rd(term), err);
}

static int load(tg_rules *rs, const char *text, tg_error *err)
{
    return tg_rules_load_string(rs, text, strlen(text), "cext.rules", err);
}

/* ---- the C functions ------------------------------------------------- */

/* (true_div (mul x y) y) -> x and (true_div (mul y x) y) -> x; ud is the
 * symbol mul. */
static tg_term *mul_div_cancel(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)c, (void)err;
    tg_term *num = tg_nth(node, 1), *den = tg_nth(node, 2);
    if (tg_length(node) != 3 || tg_car(num) != ud || tg_length(num) != 3)
        return NULL;
    if (tg_nth(num, 2) == den)
        return tg_nth(num, 1);
    if (tg_nth(num, 1) == den)
        return tg_nth(num, 2);
    return NULL;
}

/* (sub a b) -> (add a (neg b)): builds two nodes. */
static tg_term *sub_to_add(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    tg_term *b = tg_nth(node, 2);
    tg_term *nb = tg_app(c, tg_symbol_cstr(c, "neg"), 1, &b);
    tg_term *args[2] = {tg_nth(node, 1), nb};
    return tg_app(c, tg_symbol_cstr(c, "add"), 2, args);
}

/* (exp x) -> (exp (exp x)): grows forever. */
static tg_term *grow(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    return tg_app(c, tg_car(node), 1, &node);
}

/* ten -> 10 (a nullary op: the node is the symbol). */
static tg_term *ten_def(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    return node == tg_symbol_cstr(c, "ten") ? tg_int(c, 10) : NULL;
}

/* (swap a b) -> (swap b a): an oscillation. */
static tg_term *swap(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)ud, (void)err;
    tg_term *args[2] = {tg_nth(node, 2), tg_nth(node, 1)};
    return tg_app(c, tg_car(node), 2, args);
}

/* Any op: a call whose head is f becomes the same call of g (the symbol
 * f, g in ud[0], ud[1]); counts the nodes it sees in ud[2]. */
static tg_term *f_to_g(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)err;
    tg_term **s = ud;
    s[2] = (tg_term *)((uintptr_t)s[2] + 1);
    if (tg_car(node) != s[0])
        return NULL;
    return tg_cons(c, s[1], tg_cdr(c, node));
}

static tg_term *failing(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)c, (void)node, (void)ud;
    tg_error_set(err, TG_ERR_RANGE, "shape mismatch %d", 42);
    return NULL;
}

/* Tries to rewrite with its own rule set (ud): must be refused. */
static char reentry_msg[512];
static tg_term *reentering(tg_ctx *c, tg_term *node, void *ud, tg_error *err)
{
    (void)c, (void)err;
    tg_error e;
    tg_term *r = tg_normalize(ud, node, 0, &e);
    snprintf(reentry_msg, sizeof reentry_msg, "%s", r ? "(allowed)" : e.message);
    return NULL;
}

/* (small? x): an integer below ud. */
static int small_p(tg_ctx *c, tg_term *const *args, unsigned nargs, void *ud, tg_error *err)
{
    (void)c, (void)err;
    int64_t v;
    return nargs == 1 && tg_int_get(args[0], &v) == 0 && v < (int64_t)(intptr_t)ud;
}

/* (same-head? a b) */
static int same_head_p(tg_ctx *c, tg_term *const *args, unsigned nargs, void *ud, tg_error *err)
{
    (void)c, (void)ud, (void)err;
    return nargs == 2 && tg_car(args[0]) && tg_car(args[0]) == tg_car(args[1]);
}

static int bad_p(tg_ctx *c, tg_term *const *args, unsigned nargs, void *ud, tg_error *err)
{
    (void)c, (void)args, (void)nargs, (void)ud;
    tg_error_set(err, TG_ERR_TYPE, "not a tensor");
    return -1;
}

static int zero_p(tg_ctx *c, tg_term *const *args, unsigned nargs, void *ud, tg_error *err)
{
    (void)c, (void)args, (void)nargs, (void)ud, (void)err;
    return 1;
}

/* ---- the tests --------------------------------------------------------- */

static const char *ops =
    "(op mul (arity 2) comm) (op true_div (arity 2)) (op add (arity 2) comm)\n"
    "(op sub (arity 2)) (op neg (arity 1)) (op exp (arity 1)) (op swap (arity 2))\n"
    "(op f (arity 1 2)) (op g (arity 1 2)) (op k (arity 1))\n";

/* x*y/y as a C rewriter and as a rule: same results and counts. */
static void mul_div(tg_ctx *c)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(c, &err);
    TAP_EQ_INT(load(rs, ops, &err), 0, "ops");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "mul-div-cancel-c", "true_div", "algebra fast",
                                     mul_div_cancel, tg_symbol_cstr(c, "mul"), &err),
               0, "register the C rewriter");
    const char *db = "(rule mul-div-cancel (true_div (mul ?x ?y) ?y) => ?x (tags algebra))\n"
                     "(equilibrium canon-c (tags fast_run) mul-div-cancel-c)\n"
                     "(equilibrium canon-r (tags fast_run) mul-div-cancel)\n"
                     "(walk walk-c mul-div-cancel-c)\n"
                     "(walk walk-r mul-div-cancel)\n"
                     "(walk walk-c-out (order out-to-in) mul-div-cancel-c)\n"
                     "(sequence seq-c (1 mul-div-cancel-c) (2 canon-r))\n";
    TAP_EQ_INT(load(rs, db, &err), 0, "a database naming it");
    if (err.code)
        TAP_DIAG("%s", tap_msg(&err));
    static const char *const cases[][2] = {
        {"(true_div (mul x y) y)", "x"},
        {"(true_div (mul y x) y)", "x"},
        {"(true_div (mul (add y z) x) (add y z))", "x"},
        {"(exp (true_div (mul a (true_div (mul b c) c)) b))", "(exp a)"},
        {"(true_div (mul x y) z)", "(true_div (mul x y) z)"},
        {"(add (true_div (mul p q) q) (true_div (mul q p) q))", "(add p p)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_term *want = rd(cases[i][1]);
        tg_term *rc = rewrite(rs, "canon-c", cases[i][0], &err);
        char pc[600];
        snprintf(pc, sizeof pc, "%s", tap_show(tg_rules_profile(rs)));
        tg_term *rr = rewrite(rs, "canon-r", cases[i][0], &err);
        char pr[600];
        snprintf(pr, sizeof pr, "%s", tap_show(tg_rules_profile(rs)));
        TAP_CHECK(rc == want, "C rewriter: %s -> %s (%s)", cases[i][0], tap_show(rc), cases[i][1]);
        TAP_CHECK(rr == want, "rule: %s -> %s", cases[i][0], tap_show(rr));
        /* the profiles differ only in the names */
        char *p = strstr(pc, "mul-div-cancel-c");
        if (p)
            memmove(p + 14, p + 16, strlen(p + 16) + 1);
        p = strstr(pc, "canon-c");
        if (p)
            p[6] = 'r';
        TAP_EQ_STR(pc, pr, "the same profile counts");
    }
    /* the example: merged by hash-consing, one rewrite */
    TAP_CHECK(rewrite(rs, "canon-c", "(true_div (mul (add y z) x) (add y z))", &err) == rd("x"),
              "(add y z) is one node: no merge step");
    TAP_EQ_STR(tap_show(tg_rules_profile(rs)),
               "(profile canon-c (passes 2) (nodes 3 0 3) (rewrites 1) (conditions 0) "
               "(rules (mul-div-cancel-c 1 0)) (never-fired))",
               "golden profile of the C rewriter");
    TAP_CHECK(rewrite(rs, "walk-c", "(exp (true_div (mul a (true_div (mul b c) c)) b))", &err) ==
                  rd("(exp a)"),
              "a walk inputs first rewrites the inner site, then the outer one");
    TAP_CHECK(rewrite(rs, "walk-c-out", "(exp (true_div (mul a (true_div (mul b c) c)) b))", &err) ==
                  rd("(exp (true_div (mul a b) b))"),
              "outputs first: the outer node does not match yet, its result is not walked again");
    TAP_CHECK(rewrite(rs, "seq-c", "(true_div (mul (true_div (mul b c) c) d) b)", &err) ==
                  rd("d"),
              "a sequence with the C rewriter as an item");

    /* queries: by tag, by name */
    TAP_CHECK(rewrite(rs, "(query canon-c (exclude mul-div-cancel-c))", "(true_div (mul x y) y)", &err) ==
                  rd("(true_div (mul x y) y)"),
              "excluded by its name");
    TAP_CHECK(rewrite(rs, "(query canon-c (require algebra))", "(true_div (mul x y) y)", &err) ==
                  rd("x"),
              "selected by its own tag");
    TAP_CHECK(rewrite(rs, "(query canon-c (exclude fast))", "(true_div (mul x y) y)", &err) ==
                  rd("(true_div (mul x y) y)"),
              "excluded by its own tag");

    /* traces show it under its name */
    char *buf = NULL;
    size_t len = 0;
    FILE *tr = open_memstream(&buf, &len);
    tg_rules_set_trace(rs, tr, 1);
    rewrite(rs, "canon-c", "(true_div (mul y x) y)", &err);
    tg_rules_set_trace(rs, NULL, 0);
    fclose(tr);
    /* mul is commutative: its arguments are in canonical order */
    TAP_EQ_STR(buf, "mul-div-cancel-c: (true_div (mul x y) y) => x\n", "trace line");
    free(buf);

    /* tg_normalize uses it too (every forward rule) */
    TAP_CHECK(tg_normalize(rs, rd("(k (true_div (mul u v) v))"), 0, &err) == rd("(k u)"),
              "tg_normalize");

    /* registered again: the new function */
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "mul-div-cancel-c", "true_div", NULL, failing, NULL, &err), 0,
               "register again");
    TAP_CHECK(rewrite(rs, "canon-c", "(true_div (mul x y) y)", &err) == NULL, "the new function runs");
    TAP_EQ_STR(err.message, "C rewriter mul-div-cancel-c failed on (true_div (mul x y) y): shape mismatch 42",
               "an error names the rewriter and the node");
    TAP_EQ_INT(err.code, TG_ERR_RANGE, "with the callback's code");
    TAP_CHECK(rewrite(rs, "walk-c", "(exp (true_div (mul x y) y))", &err) == NULL, "in a walk too");
    TAP_CHECK(rewrite(rs, "canon-c", "(exp x)", &err) == rd("(exp x)"), "not called on other ops");
    tg_rules_free(rs);
}

/* Nodes created, a result reduced at its root, cycles, max-use ratio. */
static void results(tg_ctx *c)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(c, &err);
    TAP_EQ_INT(load(rs, ops, &err), 0, "ops");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "sub-to-add", "sub", NULL, sub_to_add, NULL, &err), 0,
               "sub-to-add");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "swap-args", "swap", NULL, swap, NULL, &err), 0, "swap-args");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "grow", "exp", NULL, grow, NULL, &err), 0, "grow");
    const char *db = "(rule add-neg (add ?x (neg ?x)) => 0)\n"
                     "(equilibrium canon sub-to-add add-neg)\n"
                     "(walk w sub-to-add add-neg)\n"
                     "(equilibrium osc swap-args)\n"
                     "(equilibrium limited (max-use-ratio 2) sub-to-add grow)\n";
    TAP_EQ_INT(load(rs, db, &err), 0, "db");
    TAP_CHECK(rewrite(rs, "canon", "(exp (sub fresh1 fresh1))", &err) == rd("(exp 0)"),
              "(sub a a) -> (add a (neg a)) -> 0");
    TAP_EQ_STR(tap_show(tg_rules_profile(rs)),
               "(profile canon (passes 2) (nodes 2 1 2) (rewrites 2) (conditions 0) "
               "(rules (sub-to-add 1 2) (add-neg 1 0)) (never-fired))",
               "two nodes created, and the result's root reduced in the same pass");
    TAP_CHECK(rewrite(rs, "w", "(sub fresh2 fresh2)", &err) == rd("(add fresh2 (neg fresh2))"),
              "a walk takes the result as it is");
    TAP_CHECK(rewrite(rs, "osc", "(swap a b)", &err) == NULL, "an oscillating C rewriter");
    TAP_EQ_STR(err.message, "rewriting cycles: (swap a b) comes back after swap-args -> swap-args",
               "is a cycle naming it");
    TAP_CHECK(rewrite(rs, "limited", "(add (sub a b) (sub c d))", &err) == rd("(add (add a (neg b)) (add c (neg d)))"),
              "under its max-use ratio");
    TAP_CHECK(rewrite(rs, "limited", "(k (exp a))", &err) == NULL, "over it (each result reduced at its root)");
    TAP_EQ_STR(err.message, "rule grow fired more than 5 times (the max-use ratio): stopped",
               "named");

    /* any op */
    void *st[3] = {tg_symbol_cstr(c, "f"), tg_symbol_cstr(c, "g"), 0};
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "f-to-g", NULL, NULL, f_to_g, st, &err), 0, "for any op");
    TAP_EQ_INT(load(rs, "(walk fg f-to-g)", &err), 0, "its walk");
    TAP_CHECK(rewrite(rs, "fg", "(sub (f (exp x)) (f y z))", &err) == rd("(sub (g (exp x)) (g y z))"),
              "any op: f -> g at every arity");
    TAP_EQ_INT((uintptr_t)st[2], 4, "called on every declared op's node (sub, f, exp, f)");
    TAP_CHECK(rewrite(rs, "fg", "(undeclared (f x))", &err) == rd("(undeclared (g x))"),
              "not on undeclared heads (constants)");

    /* a nullary op */
    TAP_EQ_INT(load(rs, "(op ten (arity 0))", &err), 0, "a nullary op");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "ten-def", "ten", NULL, ten_def, NULL, &err), 0, "ten-def");
    TAP_EQ_INT(load(rs, "(walk wt ten-def) (equilibrium et ten-def)", &err), 0, "its rewriters");
    TAP_CHECK(rewrite(rs, "wt", "ten", &err) == rd("10"), "in a walk: the symbol is the node");
    TAP_CHECK(rewrite(rs, "et", "(k ten)", &err) == rd("(k 10)"), "in an equilibrium");
    TAP_CHECK(tg_normalize(rs, rd("(k ten)"), 0, &err) == rd("(k 10)"), "tg_normalize");

    /* listed apart from the rules */
    tg_term *l = tg_rules_list(rs, TG_LIST_RULES, &err);
    TAP_EQ_STR(tap_show(tg_nth(l, 0)), "(c-rewriter sub-to-add sub)", "listed as a C rewriter");
    TAP_EQ_STR(tap_show(tg_nth(l, 3)), "(rule add-neg (add ?x (neg ?x)) => 0)", "next to the rules");
    TAP_EQ_STR(tap_show(tg_nth(l, 4)), "(c-rewriter f-to-g _)", "for any op");

    /* rewriting from a callback with the same rule set is refused */
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "reenter", "k", NULL, reentering, rs, &err), 0, "reenter");
    TAP_EQ_INT(load(rs, "(walk re reenter)", &err), 0, "its walk");
    TAP_CHECK(rewrite(rs, "re", "(k 1)", &err) == rd("(k 1)"), "the walk goes on");
    TAP_EQ_STR(reentry_msg, "a C rewriter or predicate may not rewrite with its own rule set",
               "but the nested rewrite was refused");

    /* a 10^6-deep term through a C rewriter */
    tg_term *t = tg_symbol_cstr(c, "z"), *e = t;
    tg_term *sub = tg_symbol_cstr(c, "sub"), *add = tg_symbol_cstr(c, "add"),
            *neg = tg_symbol_cstr(c, "neg"), *one = tg_int(c, 1);
    tg_term *nz = tg_app(c, neg, 1, &one);
    for (int i = 0; i < 1000000; i++) {
        tg_term *a[2] = {t, one}, *b[2] = {e, nz};
        t = tg_app(c, sub, 2, a);
        e = tg_app(c, add, 2, b);
    }
    TAP_CHECK(tg_rewrite(rs, rd("w"), t, &err) == e, "a walk over 10^6 nested subs");
    TAP_CHECK(tg_rewrite(rs, rd("canon"), t, &err) == e, "an equilibrium over 10^6 nested subs");
    tg_rules_free(rs);
}

static void predicates(tg_ctx *c)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(c, &err);
    TAP_EQ_INT(load(rs, ops, &err), 0, "ops");
    const char *uses = "(rule small-exp (exp ?x) => 1 (when (small? ?x)))";
    TAP_EQ_INT(load(rs, uses, &err), -1, "a predicate not registered yet");
    TAP_EQ_STR(tap_msg(&err),
               "cext.rules:1:37: unknown condition or relation small? (define it with defrel) in (small? ?x)",
               "is an unknown condition at its position");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "small?", 1, small_p, (void *)(intptr_t)10, &err), 0,
               "register small?");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "same-head?", 2, same_head_p, NULL, &err), 0, "same-head?");
    const char *db = "(rule small-exp (exp ?x) => 1 (when (small? ?x)))\n"
                     "(rule big-neg (neg ?x) => 0 (when (int? ?x) (not (small? ?x))))\n"
                     "(rule add-same (add ?x ?y) => (k ?x) (when (same-head? ?x ?y)))\n"
                     "(rule sub-computed (sub ?x ?y) => ?x (when (small? (add ?x ?y))))\n"
                     "(equilibrium canon small-exp big-neg add-same sub-computed)\n";
    TAP_EQ_INT(load(rs, db, &err), 0, "then rules load");
    if (err.code)
        TAP_DIAG("%s", tap_msg(&err));
    TAP_CHECK(rewrite(rs, "canon", "(f (exp 3))", &err) == rd("(f 1)"), "(when (small? ?x)) holds");
    TAP_CHECK(rewrite(rs, "canon", "(f (exp 30))", &err) == rd("(f (exp 30))"), "and fails");
    TAP_CHECK(rewrite(rs, "canon", "(f (neg 30) (neg 3))", &err) == rd("(f 0 (neg 3))"), "under not");
    TAP_EQ_STR(tap_show(tg_rules_profile(rs)),
               "(profile canon (passes 2) (nodes 3 2 3) (rewrites 1) (conditions 3) "
               "(rules (big-neg 1 0)) (never-fired small-exp add-same sub-computed))",
               "C predicate tests count as conditions (one each pass for (neg 3))");
    TAP_CHECK(rewrite(rs, "canon", "(add (f a) (f b))", &err) == rd("(k (f a))"), "two arguments");
    TAP_CHECK(rewrite(rs, "canon", "(add (f a) (g b))", &err) == rd("(add (f a) (g b))"),
              "two arguments, false");
    TAP_CHECK(rewrite(rs, "canon", "(sub x y)", &err) == rd("(sub x y)"),
              "an argument computed by the right side's ops");
    /* replaced: rules already loaded call the new function */
    TAP_EQ_INT(tg_rules_def_predicate(rs, "small?", 1, small_p, (void *)(intptr_t)100, &err), 0,
               "register small? again");
    TAP_CHECK(rewrite(rs, "canon", "(f (exp 30))", &err) == rd("(f 1)"), "the new function is used");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "small?", 2, small_p, NULL, &err), -1, "not with another arity");
    TAP_EQ_STR(err.message,
               "tg_rules_def_predicate: small? was registered with arity 1 (rules may use it), not 2",
               "its message");
    TAP_EQ_INT(load(rs, "(rule r2 (exp ?x) => 2 (when (same-head? ?x)))", &err), -1, "wrong arity in a rule");
    TAP_EQ_STR(tap_msg(&err),
               "cext.rules:1:30: wrong arity: predicate same-head? takes 2 arguments, given 1 in (same-head? ?x)",
               "its message");
    TAP_EQ_INT(load(rs, "(rule r3 (exp ?x) => 2 (when (not (zero? ?x))))", &err), -1, "unknown under not");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "zero?", 0, zero_p, NULL, &err), 0, "a nullary predicate");
    TAP_EQ_INT(load(rs, "(rule r4 (k ?x) => ?x (when (zero?))) (walk w4 r4)", &err), 0, "used");
    TAP_CHECK(rewrite(rs, "w4", "(k 5)", &err) == rd("5"), "it holds");

    TAP_EQ_INT(tg_rules_def_predicate(rs, "bad?", 1, bad_p, NULL, &err), 0, "bad?");
    TAP_EQ_INT(load(rs, "(rule r5 (mul ?x ?y) => ?x (when (bad? ?y))) (equilibrium e5 r5)", &err), 0,
               "a rule using it");
    TAP_CHECK(rewrite(rs, "e5", "(exp (mul a b))", &err) == NULL, "an error from a predicate");
    TAP_EQ_STR(err.message, "C predicate bad? failed on (bad? b): not a tensor", "names it");

    TAP_EQ_INT(tg_rules_def_predicate(rs, "int?", 1, small_p, NULL, &err), -1, "a built-in name");
    TAP_EQ_STR(err.message, "tg_rules_def_predicate: int? is a built-in condition", "its message");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "x", 1, NULL, NULL, &err), -1, "no function");
    TAP_EQ_INT(tg_rules_def_predicate(rs, "", 1, small_p, NULL, &err), -1, "empty name");
    tg_rules_free(rs);
}

static void registration(tg_ctx *c)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(c, &err);
    TAP_EQ_INT(load(rs, ops, &err), 0, "ops");
    TAP_EQ_INT(load(rs, "(rule r1 (exp ?x) => ?x) (walk w1 r1)", &err), 0, "a rule and a rewriter");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "x", "nosuchop", NULL, swap, NULL, &err), -1, "unknown op");
    TAP_EQ_STR(err.message,
               "tg_rules_def_rewriter: unknown op nosuchop (declare it with (op nosuchop ...) first)",
               "its message");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "r1", "exp", NULL, swap, NULL, &err), -1, "a rule's name");
    TAP_EQ_STR(err.message, "tg_rules_def_rewriter: r1 is already the name of a rule (cext.rules:1:1)",
               "its message");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "w1", "exp", NULL, swap, NULL, &err), -1, "a rewriter's name");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "c1", "exp", NULL, swap, NULL, &err), 0, "c1");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "c1", "neg", NULL, swap, NULL, &err), -1, "again for another op");
    TAP_EQ_STR(err.message, "tg_rules_def_rewriter: c1 was registered for op exp", "its message");
    TAP_EQ_INT(load(rs, "(rule c1 (neg ?x) => ?x)", &err), -1, "a rule may not take its name");
    TAP_EQ_STR(tap_msg(&err), "cext.rules:1:1: rule c1 defined twice (first as a C node rewriter)",
               "its message");
    TAP_EQ_INT(load(rs, "(walk c1 r1)", &err), -1, "nor a rewriter");
    TAP_EQ_INT(load(rs, "(walk w2 c1 nosuch)", &err), -1, "a failed load naming it ...");
    TAP_EQ_INT(load(rs, "(walk w2 c1)", &err), 0, "... leaves it registered");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, "c2", NULL, NULL, NULL, NULL, &err), -1, "no function");
    TAP_EQ_INT(tg_rules_def_rewriter(NULL, "c2", NULL, NULL, swap, NULL, &err), -1, "no rule set");
    TAP_EQ_INT(tg_rules_def_rewriter(rs, NULL, NULL, NULL, swap, NULL, &err), -1, "no name");
    tg_rules_free(rs);
}

/* A predicate that collects, then makes garbage-sized nodes that would
 * take the place of anything the collection freed. */
static int collect(tg_ctx *c, tg_term *const *args, unsigned n, void *ud, tg_error *err)
{
    (void)args, (void)n, (void)ud, (void)err;
    GC_gcollect();
    tg_term *junk = tg_symbol_cstr(c, "junk");
    for (long i = 0; i < 100000; i++)
        tg_app(c, junk, 3, (tg_term *[]){tg_int(c, i), tg_int(c, -i), junk});
    return 1;
}

/* Normal forms the input walk made for shared nodes stay alive while
 * only its done map (malloc memory, a collector root) holds them: each
 * (f sI) becomes (g sI sI sI), which its first parent (drop (f sI) z)
 * drops; a collection runs before the second parent asks for them again.
 * Many of them, each dropped on its own, so that a stale copy of a
 * pointer here and there (the collector is conservative) cannot keep
 * them all. */
static void done_map_roots(tg_ctx *c)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(c, &err);
    TAP_EQ_INT(tg_rules_def_predicate(rs, "collect!", 0, collect, NULL, &err), 0, "collect!");
    const char *db = "(op f (arity 1)) (op g (arity 3)) (op drop (arity 2)) (op q (arity 1))\n"
                     "(rule f-g (f ?x) => (g ?x ?x ?x))\n"
                     "(rule drop-first (drop ?a ?b) => ?b)\n"
                     "(rule q-collects (q ?w) => ?w (when (collect!)))\n";
    TAP_EQ_INT(load(rs, db, &err), 0, "the rules");
    enum { K = 200 };
    size_t cap = 64 * K + 100;
    char *in = malloc(3 * cap), *want = malloc(3 * cap), *drops = malloc(cap), *zs = malloc(cap);
    char *fs = malloc(cap), *gs = malloc(cap), *atoms = malloc(cap);
    size_t nd = 0, nz = 0, nf = 0, ng = 0, na = 0;
    for (int i = 0; i < K; i++) {
        nd += (size_t)snprintf(drops + nd, cap - nd, " (drop (f s%d) z)", i);
        nz += (size_t)snprintf(zs + nz, cap - nz, " z");
        nf += (size_t)snprintf(fs + nf, cap - nf, " (f s%d)", i);
        ng += (size_t)snprintf(gs + ng, cap - ng, " (g s%d s%d s%d)", i, i, i);
    }
    /* the atoms overwrite the value stack's slots that held them */
    for (int i = 0; i < K + 50; i++)
        na += (size_t)snprintf(atoms + na, cap - na, " a%d", i);
    snprintf(in, 3 * cap, "(h (k%s) (p%s (q w)%s))", drops, atoms, fs);
    snprintf(want, 3 * cap, "(h (k%s) (p%s w%s))", zs, atoms, gs);
    tg_term *r = tg_normalize(rs, rd(in), 0, &err);
    TAP_CHECK(r != NULL && r == rd(want), "dropped normal forms are found again after a collection");
    free(in), free(want), free(drops), free(zs), free(fs), free(gs), free(atoms);
    tg_rules_free(rs);
}

int main(void)
{
    tg_error err;
    ctx = tg_ctx_new(&err);
    TAP_CHECK(ctx != NULL, "a context");
    mul_div(ctx);
    results(ctx);
    predicates(ctx);
    registration(ctx);
    done_map_roots(ctx);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
