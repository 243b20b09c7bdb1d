/* test_loops.c - self loops (a rule whose right side calls its own op on
 * parts of its left side, such as (lt (s ?n) (s ?m)) => (lt ?n ?m), which
 * the machine fires in a loop of its own): normal forms and rewrite
 * counts against a hand-written evaluation, with memo on and off; with
 * memo on, loops through memo's lazy phase and of an op it drops against
 * the general path (rule timing), memo's hits found after them; a rule before the loop that matches some of its
 * calls still fires first; a swap of arguments, constants and nonlinear
 * patterns; the step and time limits stop a long loop. */
#include <string.h>

#include "harness.h"
#include "tgrel.h"

static const char rules[] =
    "(op s (arity 1)) (op lt (arity 2)) (op sw (arity 2)) (op cd (arity 2))\n"
    "(op f (arity 2)) (op eqn (arity 2)) (op deep (arity 2)) (op wrap (arity 1)) (op stop (arity 1))\n"
    "(rule lt-00 (lt 0 0) => false)\n"
    "(rule lt-0s (lt 0 (s ?n)) => true)\n"
    "(rule lt-s0 (lt (s ?n) 0) => false)\n"
    "(rule lt-ss (lt (s ?n) (s ?m)) => (lt ?n ?m))\n"
    /* the arguments swapped: the new call reads the old one's registers */
    "(rule sw-s (sw (s ?x) ?y) => (sw ?y ?x))\n"
    /* a constant as an argument of the new call */
    "(rule cd-s (cd (s ?x) ?y) => (cd ?x k))\n"
    /* a rule before the loop that matches some of its calls: it fires */
    "(rule f-stop (f (s (s ?x)) ?y) => (stop ?y))\n"
    "(rule f-s (f (s ?x) ?y) => (f ?x ?y))\n"
    /* a nonlinear rule before the loop, disjoint from it by a head */
    "(rule eqn-w (eqn (wrap ?x) ?x) => same)\n"
    "(rule eqn-s (eqn (s ?x) (s ?y)) => (eqn ?x ?y))\n"
    /* a pattern two levels deep */
    "(rule deep-2 (deep (s (s ?x)) ?y) => (deep ?x (s ?y)))\n"
    /* memo on: a call of g before a long loop, found again after it
     * (again's tail call), and loops of an op memo drops (cnt's) */
    "(op top (arity 2)) (op top2 (arity 3)) (op g (arity 1)) (op h (arity 1)) (op again (arity 1))\n"
    "(op pair (arity 3)) (op cnt (arity 2)) (op c2 (arity 2))\n"
    "(rule top (top ?a ?b) => (pair (g ?a) (lt ?a ?b) (again ?a)))\n"
    "(rule top2 (top2 ?a ?n ?m) => (pair (g ?a) (cnt ?n ?m) (again ?a)))\n"
    "(rule g (g ?x) => (h (h ?x))) (rule h (h ?x) => (s ?x)) (rule again (again ?x) => (g ?x))\n"
    "(rule cnt-s (cnt (s ?n) ?m) => (c2 (lt ?n ?m) (cnt ?n ?m))) (rule cnt-0 (cnt 0 ?m) => done)\n"
    /* a cycle through a loop of an op memo dropped (memo.test's) */
    "(op cy (arity 2)) (op cys (arity 1)) (op both (arity 2))\n"
    "(rule cy-down (cy (s ?n) ?m) => (cy ?n ?m)) (rule cy-back (cy 0 ?m) => (cy ?m ?m))\n"
    "(rule cy-end (cy e ?m) => ?m) (rule cys-0 (cys 0) => nil)\n"
    "(rule cys-s (cys (s ?n)) => (both (cy (s (s e)) (s ?n)) (cys ?n)))\n";

static tg_term *num(tg_ctx *ctx, long n)
{
    tg_term *t = tg_int(ctx, 0), *s = tg_symbol_cstr(ctx, "s");
    while (n-- > 0)
        t = tg_app(ctx, s, 1, &t);
    return t;
}

static tg_term *call2(tg_ctx *ctx, const char *op, tg_term *a, tg_term *b)
{
    tg_term *args[2] = {a, b};
    return tg_app(ctx, tg_symbol_cstr(ctx, op), 2, args);
}

static unsigned long long rewrites(tg_rules *rs)
{
    unsigned long long rw = 0, cond = 0;
    tg_rules_counts(rs, &rw, &cond);
    return rw;
}

/* lt on i and j, memo off and on: the normal form and the count */
static int check_lt(tg_ctx *ctx, tg_rules *rs, long i, long j)
{
    tg_error err;
    tg_term *want = tg_symbol_cstr(ctx, i < j ? "true" : "false");
    unsigned long long n = (unsigned long long)(i < j ? i : j) + 1;
    int ok = 1;
    for (int memo = 0; memo < 2; memo++) {
        tg_term *nf = tg_normalize(rs, call2(ctx, "lt", num(ctx, i), num(ctx, j)), memo ? TG_NF_MEMO : 0,
                                   &err);
        ok &= nf == want && rewrites(rs) == n;
    }
    return ok;
}

/* q with memo on, by the fast paths and by the general path (which rule
 * timing forces): the same normal form and rewrite count, into *nf, *rw */
static int memo_same(tg_rules *rs, tg_term *q, tg_term **nf, unsigned long long *rw)
{
    tg_error err;
    tg_term *got[2];
    unsigned long long n[2];
    for (int timing = 0; timing < 2; timing++) {
        tg_rules_set_timing(rs, timing);
        got[timing] = tg_normalize(rs, q, TG_NF_MEMO, &err);
        n[timing] = rewrites(rs);
    }
    tg_rules_set_timing(rs, 0);
    *nf = got[0], *rw = n[0];
    return got[0] && got[0] == got[1] && n[0] == n[1];
}

/* Loops under memo: they run as loops while memo would pass their calls
 * unlooked-up (its lazy phase; an op it dropped), and memo's table is
 * then what the general path leaves: the call of g made before the loop
 * is found after it (its 3 rewrites saved), the counts are the same. */
static void memo_loops(tg_ctx *ctx, tg_rules *rs)
{
    tg_error err;
    /* lt over 5000: its calls run past the lazy phase (memo.h) */
    tg_term *a = num(ctx, 5000), *args[3] = {a, num(ctx, 5001), NULL};
    tg_term *q = tg_app(ctx, tg_symbol_cstr(ctx, "top"), 2, args), *nf;
    unsigned long long rw, plain;
    tg_term *s = tg_symbol_cstr(ctx, "s"), *sa = tg_app(ctx, s, 1, &a), *ssa = tg_app(ctx, s, 1, &sa);
    tg_term *want[3] = {ssa, tg_symbol_cstr(ctx, "true"), ssa};
    tg_term *wq = tg_app(ctx, tg_symbol_cstr(ctx, "pair"), 3, want);
    nf = tg_normalize(rs, q, 0, &err);
    plain = rewrites(rs);
    /* top, g and its two h, lt's 5001, again, g and its two h */
    TAP_CHECK(nf == wq && plain == 1 + 3 + 5001 + 4,
              "memo off: (pair (s (s a)) true (s (s a))) after %llu rewrites", plain);
    TAP_CHECK(memo_same(rs, q, &nf, &rw) && nf == wq,
              "memo on: a loop through its lazy phase, the same normal form and count as the general path");
    TAP_CHECK(rw == plain - 3, "g's call found again after the loop: %llu rewrites, plain %llu", rw, plain);

    /* cnt: 1200 calls of lt, each a loop, never found again: lt dropped */
    long n = 1200, mm = 3000;
    args[1] = num(ctx, n), args[2] = num(ctx, mm);
    q = tg_app(ctx, tg_symbol_cstr(ctx, "top2"), 3, args);
    tg_term *c = tg_symbol_cstr(ctx, "done"), *c2 = tg_symbol_cstr(ctx, "c2"), *t = tg_symbol_cstr(ctx, "true");
    for (long i = 0; i < n; i++) {
        tg_term *e[2] = {t, c};
        c = tg_app(ctx, c2, 2, e);
    }
    want[1] = c;
    wq = tg_app(ctx, tg_symbol_cstr(ctx, "pair"), 3, want);
    unsigned long long hand = 1 + 3 + (unsigned long long)(n + 1) + (unsigned long long)(n * (n + 1) / 2) + 4;
    nf = tg_normalize(rs, q, 0, &err);
    plain = rewrites(rs);
    TAP_CHECK(nf == wq && plain == hand,
              "memo off: %ld loops of lt after %llu rewrites (by hand %llu)", n, plain, hand);
    TAP_CHECK(memo_same(rs, q, &nf, &rw) && nf == wq,
              "memo on: loops of an op memo drops, the same normal form and count as the general path");
    TAP_CHECK(rw == plain - 3, "g's call still found after them: %llu rewrites, plain %llu", rw, plain);

    /* a cycle after thousands of loops of cy (dropped): memo watches the
     * same call by the loops as by the general path, and names it */
    tg_term *big = num(ctx, 5120), *three = num(ctx, 3);
    args[0] = tg_app(ctx, tg_symbol_cstr(ctx, "cys"), 1, &big);
    args[1] = call2(ctx, "cy", big, three);
    q = tg_app(ctx, tg_symbol_cstr(ctx, "both"), 2, args);
    char msg[2][512];
    for (int timing = 0; timing < 2; timing++) {
        tg_rules_set_timing(rs, timing);
        tg_error_clear(&err);
        nf = tg_normalize(rs, q, TG_NF_MEMO, &err);
        snprintf(msg[timing], sizeof msg[timing], "%s", nf ? "(no error)" : err.message);
    }
    tg_rules_set_timing(rs, 0);
    TAP_CHECK(strstr(msg[0], "rewriting cycles: (cy ") && strcmp(msg[0], msg[1]) == 0,
              "a cycle through loops of a dropped op: the same report as the general path's (%s | %s)", msg[0],
              msg[1]);
}

int main(void)
{
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(tg_rules_load_string(rs, rules, sizeof rules - 1, "loops", &err) == 0, "rules load (%s)",
              err.message);

    int ok = 1;
    for (long i = 0; i <= 12; i++)
        for (long j = 0; j <= 12; j++)
            ok &= check_lt(ctx, rs, i, j);
    TAP_CHECK(ok, "lt on 0..12 x 0..12: i < j and min(i, j) + 1 rewrites, memo on and off");
    TAP_CHECK(check_lt(ctx, rs, 5000, 4999) && check_lt(ctx, rs, 4999, 5000),
              "lt on numerals of 5000: the same");

    /* sw: (sw (s x) y) -> (sw y x) until the first argument is 0 */
    ok = 1;
    for (long a = 0; a <= 9; a++)
        for (long b = 0; b <= 9; b++) {
            long x = a, y = b, n = 0;
            while (x > 0) {
                long t = x - 1;
                x = y, y = t, n++;
            }
            tg_term *want = call2(ctx, "sw", num(ctx, x), num(ctx, y));
            for (int memo = 0; memo < 2; memo++) {
                tg_term *nf = tg_normalize(rs, call2(ctx, "sw", num(ctx, a), num(ctx, b)),
                                           memo ? TG_NF_MEMO : 0, &err);
                ok &= nf == want && rewrites(rs) == (unsigned long long)n;
            }
        }
    TAP_CHECK(ok, "swapped arguments: the normal form and count of a hand-run loop");

    tg_term *nf = tg_normalize(rs, call2(ctx, "cd", num(ctx, 7), tg_symbol_cstr(ctx, "y")), 0, &err);
    TAP_CHECK(nf == call2(ctx, "cd", num(ctx, 0), tg_symbol_cstr(ctx, "k")) && rewrites(rs) == 7,
              "a constant argument: (cd 0 k) after 7 rewrites");

    /* f-stop fires on (f (s (s x)) y), so the loop of f-s never runs past it */
    ok = 1;
    for (long a = 0; a <= 6; a++) {
        tg_term *y = tg_symbol_cstr(ctx, "y"), *want;
        if (a >= 2) {
            tg_term *stop = tg_symbol_cstr(ctx, "stop");
            want = tg_app(ctx, stop, 1, &y);
        } else {
            want = call2(ctx, "f", num(ctx, 0), y);
        }
        nf = tg_normalize(rs, call2(ctx, "f", num(ctx, a), y), 0, &err);
        ok &= nf == want && rewrites(rs) == (a >= 2 ? 1u : (unsigned long long)a);
    }
    TAP_CHECK(ok, "a rule before the loop that overlaps it fires first");

    tg_term *w = tg_symbol_cstr(ctx, "wrap"), *three = num(ctx, 3);
    nf = tg_normalize(rs, call2(ctx, "eqn", tg_app(ctx, w, 1, &three), num(ctx, 3)), 0, &err);
    TAP_CHECK(nf == tg_symbol_cstr(ctx, "same"), "the nonlinear rule before it still fires");
    nf = tg_normalize(rs, call2(ctx, "eqn", num(ctx, 4), num(ctx, 6)), 0, &err);
    TAP_CHECK(nf == call2(ctx, "eqn", num(ctx, 0), num(ctx, 2)) && rewrites(rs) == 4,
              "eqn-s loops past it: (eqn 0 (s (s 0))) after 4 rewrites");

    ok = 1;
    for (long a = 0; a <= 9; a++) {
        nf = tg_normalize(rs, call2(ctx, "deep", num(ctx, a), num(ctx, 0)), 0, &err);
        ok &= nf == call2(ctx, "deep", num(ctx, a % 2), num(ctx, a / 2)) &&
              rewrites(rs) == (unsigned long long)(a / 2);
    }
    TAP_CHECK(ok, "a pattern two levels deep: (deep a%%2 a/2) after a/2 rewrites");

    /* the limits (and an interrupt) are looked at every 2^16 rewrites,
     * inside a loop too */
    memo_loops(ctx, rs);

    tg_term *big = call2(ctx, "lt", num(ctx, 300000), num(ctx, 300001));
    TAP_EQ_INT(tg_rules_set_limits(rs, 100000, 0, &err), 0, "a step limit of 10^5 rewrites");
    tg_error_clear(&err);
    nf = tg_normalize(rs, big, 0, &err);
    TAP_CHECK(!nf && err.code == TG_ERR_RANGE && strstr(err.message, "step limit") &&
                  strstr(err.message, "lt-ss"),
              "a loop of 300001 rewrites stops at it, naming its rule (%s)", err.message);
    TAP_EQ_INT(tg_rules_set_limits(rs, 0, 1e-6, &err), 0, "a time limit of a microsecond");
    tg_error_clear(&err);
    nf = tg_normalize(rs, big, 0, &err);
    TAP_CHECK(!nf && strstr(err.message, "time limit"), "it stops the loop too (%s)", err.message);
    TAP_EQ_INT(tg_rules_set_limits(rs, 0, 0, &err), 0, "no limits");
    tg_error_clear(&err);
    nf = tg_normalize(rs, big, 0, &err);
    TAP_CHECK(nf == tg_symbol_cstr(ctx, "true") && rewrites(rs) == 300001,
              "then it runs to the end: true after 300001 rewrites");

    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
