/* test_rules.c - the rule set API: loading files (includes, include
 * cycles, errors at the offending subterm, all-or-nothing loads),
 * normalizing, rewriting with profiles and traces, and bad arguments. */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

static tg_term *nf(tg_ctx *ctx, tg_rules *rs, const char *text, unsigned flags)
{
    tg_error err;
    tg_term *t = tg_read_cstr(ctx, text, &err);
    return t ? tg_normalize(rs, t, flags, &err) : NULL;
}

/* The error message without the directories of the file name. */
static const char *msg(const tg_error *err)
{
    static char buf[1200];
    char tmp[1100];
    tg_error_format(err, tmp, sizeof tmp);
    const char *slash = strrchr(err->file, '/');
    const char *p = strstr(tmp, err->file);
    if (p && slash)
        snprintf(buf, sizeof buf, "%s", tmp + (p - tmp) + (slash + 1 - err->file));
    else
        snprintf(buf, sizeof buf, "%s", tmp);
    return buf;
}

/* n applications of head around x, with the leading arguments lead
 * (nl of them) before it in each: built by hand, not by rules. */
static tg_term *wrap(tg_ctx *ctx, const char *head, tg_term *const *lead, unsigned nl, long n, tg_term *x)
{
    tg_term *h = tg_symbol_cstr(ctx, head), *a[4];
    for (long i = 0; i < n; i++) {
        for (unsigned j = 0; j < nl; j++)
            a[j] = lead[j];
        a[nl] = x;
        x = tg_app(ctx, h, nl + 1, a);
    }
    return x;
}

/* q with memo on, by levels and by the general path (which rule timing
 * forces): the same normal form and rewrite count, into *nf, *rw */
static int memo_same(tg_rules *rs, tg_term *q, tg_term **nf, unsigned long long *rw)
{
    tg_error err;
    tg_term *got[2];
    unsigned long long n[2], cond;
    for (int timing = 0; timing < 2; timing++) {
        tg_rules_set_timing(rs, timing);
        got[timing] = tg_normalize(rs, q, TG_NF_MEMO, &err);
        tg_rules_counts(rs, &n[timing], &cond);
    }
    tg_rules_set_timing(rs, 0);
    *nf = got[0], *rw = n[0];
    return got[0] && got[0] == got[1] && n[0] == n[1];
}

/* Levels under memo: they run while memo would pass their calls
 * unlooked-up (its lazy phase; an op it dropped), and memo's table is
 * then what the general path leaves: g's call made before them is found
 * after them (its 3 rewrites saved), the counts are the same. */
static void ctor_recursions_memo(tg_ctx *ctx, tg_rules *rs)
{
    tg_error err;
    unsigned long long rw, plain, cond;
    long n = 5000;
    tg_term *zero = tg_int(ctx, 0), *seven = tg_int(ctx, 7), *nf;
    tg_term *a = wrap(ctx, "S", NULL, 0, n, zero), *args[3] = {a, seven, NULL};
    tg_term *q = tg_app(ctx, tg_symbol_cstr(ctx, "top"), 2, args);
    tg_term *ga = wrap(ctx, "S", NULL, 0, 2, a);
    tg_term *want[3] = {ga, wrap(ctx, "S", NULL, 0, n, seven), ga};
    tg_term *wq = tg_app(ctx, tg_symbol_cstr(ctx, "pair"), 3, want);
    nf = tg_normalize(rs, q, 0, &err);
    tg_rules_counts(rs, &plain, &cond);
    /* top, g and its two h, add's n + 1, again, g and its two h */
    TAP_CHECK(nf == wq && plain == 1 + 3 + (unsigned long long)n + 1 + 4,
              "memo off: (pair (S (S a)) (S^%ld 7) (S (S a))) after %llu rewrites", n, plain);
    TAP_CHECK(memo_same(rs, q, &nf, &rw) && nf == wq,
              "memo on: levels through its lazy phase, the same normal form and count as the general path");
    TAP_CHECK(rw == plain - 3, "g's call found again after them: %llu rewrites, plain %llu", rw, plain);

    /* cnt: 1200 calls of add, each a chain of levels, (add S^i 7) made
     * again as the second call of the chain of (add S^i+1 7): its first
     * 16 calls remembered (memo.h, TGW_MEMO_NEST: the deeper ones held),
     * the next chain is found at its top */
    n = 1200;
    args[1] = wrap(ctx, "S", NULL, 0, n, zero);
    args[2] = seven;
    q = tg_app(ctx, tg_symbol_cstr(ctx, "top2"), 3, args);
    tg_term *c = tg_symbol_cstr(ctx, "done"), *c2 = tg_symbol_cstr(ctx, "c2");
    for (long i = 0; i < n; i++) {
        tg_term *e[2] = {wrap(ctx, "S", NULL, 0, i, seven), c};
        c = tg_app(ctx, c2, 2, e);
    }
    want[1] = c;
    wq = tg_app(ctx, tg_symbol_cstr(ctx, "pair"), 3, want);
    unsigned long long hand = 1 + 3 + (unsigned long long)(n + 1) + (unsigned long long)(n * (n + 1) / 2) + 4;
    nf = tg_normalize(rs, q, 0, &err);
    tg_rules_counts(rs, &plain, &cond);
    TAP_CHECK(nf == wq && plain == hand, "memo off: %ld recursions of add after %llu rewrites (by hand %llu)", n,
              plain, hand);
    TAP_CHECK(memo_same(rs, q, &nf, &rw) && nf == wq,
              "memo on: levels of an op memo holds, the same normal form and count as the general path");
    TAP_CHECK(rw + 3 <= plain && 10 * rw < plain,
              "each chain found again at its top, and g's call after them: %llu rewrites, plain %llu", rw, plain);
}

/* q normalized memo off and on, each by levels and by the general path
 * (which rule timing forces): the normal forms into got, the rewrite
 * counts into rw, in that order. */
static void four_ways(tg_rules *rs, tg_term *q, tg_term **got, unsigned long long *rw)
{
    tg_error err;
    unsigned long long cond;
    for (int run = 0; run < 4; run++) {
        tg_rules_set_timing(rs, run & 1);
        got[run] = tg_normalize(rs, q, run & 2 ? TG_NF_MEMO : 0, &err);
        tg_rules_counts(rs, &rw[run], &cond);
    }
    tg_rules_set_timing(rs, 0);
}

/* Levels whose next matched argument is not where conc's and plus's
 * are (the machine carries it from one level to the next in a register
 * when the match copied it, plain_run): the second argument matched
 * (ad2, its copy the only one; ct2, the second of two, one constructor
 * argument before the call), and arguments swapped (sw: the next level
 * matches a call argument the level did not copy, read from the stack).
 * Normal forms and counts against the general path and a hand count of
 * the levels; 70000 levels poll and grow the value stack. */
static void ctor_recursions_sources(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *src =
        "(op S (arity 1)) (op L (arity 2)) (op ad2 (arity 2)) (op ct2 (arity 2)) (op sw (arity 2))"
        "(rule ad2-S (ad2 ?m (S ?n)) => (S (ad2 ?m ?n)))"
        "(rule ct2-L (ct2 ?k (L ?e ?l)) => (L ?e (ct2 ?k ?l)))"
        "(rule sw-S (sw (S ?n) ?m) => (S (sw ?m ?n))) (rule sw-0 (sw 0 ?m) => ?m)";
    TAP_EQ_INT(tg_rules_load_string(rs, src, strlen(src), NULL, &err), 0, "levels matching elsewhere");
    tg_term *zero = tg_int(ctx, 0), *seven = tg_int(ctx, 7), *lead[1] = {seven};
    static const long depth[] = {1, 2, 3, 1500, 70000};
    for (size_t d = 0; d < sizeof depth / sizeof *depth; d++) {
        long n = depth[d], a = n, b = n / 2 + 1, lev = 0;
        /* sw's levels by hand: (sw S^a S^b) -> (S (sw S^b S^(a-1))) */
        for (long t; a > 0; lev++)
            t = b, b = a - 1, a = t;
        tg_term *q[3], *want[3], *x[2];
        unsigned long long hand[3] = {(unsigned long long)n, (unsigned long long)n, (unsigned long long)lev + 1};
        /* ad2 and ct2 stop at a call no rule matches (their only rule:
         * no index, so their levels take the loop without memo's checks) */
        x[0] = seven, x[1] = wrap(ctx, "S", NULL, 0, n, zero);
        q[0] = tg_app(ctx, tg_symbol_cstr(ctx, "ad2"), 2, x);
        x[1] = zero;
        want[0] = wrap(ctx, "S", NULL, 0, n, tg_app(ctx, tg_symbol_cstr(ctx, "ad2"), 2, x));
        x[0] = wrap(ctx, "L", lead, 1, 2, zero), x[1] = wrap(ctx, "L", lead, 1, n, zero);
        q[1] = tg_app(ctx, tg_symbol_cstr(ctx, "ct2"), 2, x);
        x[1] = zero;
        want[1] = wrap(ctx, "L", lead, 1, n, tg_app(ctx, tg_symbol_cstr(ctx, "ct2"), 2, x));
        x[0] = wrap(ctx, "S", NULL, 0, n, zero), x[1] = wrap(ctx, "S", NULL, 0, n / 2 + 1, zero);
        q[2] = tg_app(ctx, tg_symbol_cstr(ctx, "sw"), 2, x);
        want[2] = wrap(ctx, "S", NULL, 0, lev + b, zero);
        for (int i = 0; i < 3; i++) {
            unsigned long long rw[4];
            tg_term *got[4];
            four_ways(rs, q[i], got, rw);
            TAP_CHECK(got[0] == want[i] && got[1] == want[i] && got[2] == want[i] && got[3] == want[i],
                      "levels matching elsewhere %d, depth %ld: the hand-built normal form, memo off and on", i,
                      n);
            TAP_CHECK(rw[0] == hand[i] && rw[1] == hand[i] && rw[2] == hand[i] && rw[3] == hand[i],
                      "levels matching elsewhere %d, depth %ld: %llu rewrites (by hand %llu), timed %llu, "
                      "memo %llu and %llu",
                      i, n, rw[0], hand[i], rw[1], rw[2], rw[3]);
        }
    }
    tg_rules_free(rs);
}

/* Right sides that wrap a call of their own op in a constructor, (S
 * (add ?n ?m)), run their levels in one frame of the machine (rset.h
 * ctorrec): normal forms and rewrite counts are those of the general
 * path, which rule timing forces, and those of a hand-built answer,
 * memo off and on (ctor_recursions_memo: levels under memo);
 * deep enough to outgrow the levels' hash array and to poll the step
 * limit inside a run of levels (every 2^16 rewrites). */
static void ctor_recursions(tg_ctx *ctx)
{
    tg_error err;
    tg_rules *rs = tg_rules_new(ctx, &err);
    const char *src =
        "(op S (arity 1)) (op L (arity 2)) (op T (arity 3)) (op end (arity 1))"
        "(op add (arity 2)) (op cat (arity 2)) (op tri (arity 2)) (op fb (arity 1))"
        "(rule add-0 (add 0 ?m) => ?m) (rule add-S (add (S ?n) ?m) => (S (add ?n ?m)))"
        "(rule cat-L (cat (L ?e ?l) ?k) => (L ?e (cat ?l ?k))) (rule cat-0 (cat 0 ?k) => ?k)"
        "(rule tri-S (tri (S ?n) ?m) => (T k ?m (tri ?n ?m))) (rule tri-0 (tri 0 ?m) => ?m)"
        "(rule fb-S (fb (S ?n)) => (S (fb ?n))) (rule fb-any (fb ?x) => (end ?x))"
        /* levels whose innermost call runs levels of another op */
        "(op nest (arity 2)) (rule nest-S (nest (S ?n) ?m) => (L ?m (nest ?n ?m)))"
        "(rule nest-0 (nest 0 ?m) => (tri ?m 7))"
        /* memo on: g's call before a long recursion found after it, and
         * recursions of an op memo holds (cnt's calls of add) */
        "(op top (arity 2)) (op top2 (arity 3)) (op g (arity 1)) (op h (arity 1)) (op again (arity 1))"
        "(op pair (arity 3)) (op cnt (arity 2)) (op c2 (arity 2))"
        "(rule top (top ?a ?b) => (pair (g ?a) (add ?a ?b) (again ?a)))"
        "(rule top2 (top2 ?a ?n ?m) => (pair (g ?a) (cnt ?n ?m) (again ?a)))"
        "(rule g (g ?x) => (h (h ?x))) (rule h (h ?x) => (S ?x)) (rule again (again ?x) => (g ?x))"
        "(rule cnt-S (cnt (S ?n) ?m) => (c2 (add ?n ?m) (cnt ?n ?m))) (rule cnt-0 (cnt 0 ?m) => done)";
    TAP_EQ_INT(tg_rules_load_string(rs, src, strlen(src), NULL, &err), 0, "constructor recursions");
    tg_term *zero = tg_int(ctx, 0), *seven = tg_int(ctx, 7), *S = tg_symbol_cstr(ctx, "S");
    tg_term *k = tg_symbol_cstr(ctx, "k"), *lead[2];
    static const long depth[] = {1, 3, 5, 1500, 70000};
    for (size_t d = 0; d < sizeof depth / sizeof *depth; d++) {
        long n = depth[d];
        tg_term *q[4], *want[4], *a[2];
        a[0] = wrap(ctx, "S", NULL, 0, n, zero), a[1] = wrap(ctx, "S", NULL, 0, 2, seven);
        q[0] = tg_app(ctx, tg_symbol_cstr(ctx, "add"), 2, a);
        want[0] = wrap(ctx, "S", NULL, 0, n + 2, seven);
        lead[0] = seven;
        a[0] = wrap(ctx, "L", lead, 1, n, zero), a[1] = wrap(ctx, "L", lead, 1, 1, zero);
        q[1] = tg_app(ctx, tg_symbol_cstr(ctx, "cat"), 2, a);
        want[1] = wrap(ctx, "L", lead, 1, n + 1, zero);
        a[0] = wrap(ctx, "S", NULL, 0, n, zero), a[1] = seven;
        q[2] = tg_app(ctx, tg_symbol_cstr(ctx, "tri"), 2, a);
        lead[0] = k, lead[1] = seven;
        want[2] = wrap(ctx, "T", lead, 2, n, seven);
        /* the innermost (fb S): fb-S's key fits, its match fails, fb-any next */
        a[0] = wrap(ctx, "S", NULL, 0, n, S);
        q[3] = tg_app(ctx, tg_symbol_cstr(ctx, "fb"), 1, a);
        want[3] = wrap(ctx, "S", NULL, 0, n, tg_app(ctx, tg_symbol_cstr(ctx, "end"), 1, &S));
        for (int i = 0; i < 4; i++) {
            unsigned long long rw[4];
            tg_term *got[4];
            four_ways(rs, q[i], got, rw);
            TAP_CHECK(got[0] == want[i] && got[1] == want[i] && got[2] == want[i] && got[3] == want[i],
                      "recursion %d, %ld levels: the hand-built normal form, memo off and on", i, n);
            TAP_CHECK(rw[0] == rw[1] && rw[0] == rw[2] && rw[0] == rw[3] && rw[0] == (unsigned long long)n + 1,
                      "recursion %d, %ld levels: %llu rewrites, %llu timed, memo %llu and %llu", i, n, rw[0],
                      rw[1], rw[2], rw[3]);
        }
    }
    /* levels of nest, then in the frame of its innermost call levels of
     * tri, above them on the stack */
    for (long n = 1; n <= 3000; n *= 7) {
        long n2 = 2 * n + 1;
        tg_term *a[2] = {wrap(ctx, "S", NULL, 0, n, zero), wrap(ctx, "S", NULL, 0, n2, zero)};
        tg_term *q = tg_app(ctx, tg_symbol_cstr(ctx, "nest"), 2, a);
        lead[0] = k, lead[1] = seven;
        tg_term *inner = wrap(ctx, "T", lead, 2, n2, seven);
        lead[0] = a[1];
        tg_term *want = wrap(ctx, "L", lead, 1, n, inner), *got[4];
        unsigned long long rw[4], hand = (unsigned long long)(n + 1 + n2 + 1);
        four_ways(rs, q, got, rw);
        TAP_CHECK(got[0] == want && got[1] == want && got[2] == want && got[3] == want,
                  "nested levels, %ld and %ld: the hand-built normal form, memo off and on", n, n2);
        TAP_CHECK(rw[0] == hand && rw[1] == hand && rw[2] == hand && rw[3] == hand,
                  "nested levels, %ld and %ld: %llu rewrites (by hand %llu), timed %llu, memo %llu and %llu", n, n2,
                  rw[0], hand, rw[1], rw[2], rw[3]);
    }
    ctor_recursions_memo(ctx, rs);
    /* the step limit, polled inside a run of levels, names the rule that
     * fired (its count brought up to date first) */
    TAP_EQ_INT(tg_rules_set_limits(rs, 1000, 0, &err), 0, "a step limit");
    tg_term *a[2] = {wrap(ctx, "S", NULL, 0, 70000, zero), zero};
    TAP_CHECK(tg_normalize(rs, tg_app(ctx, tg_symbol_cstr(ctx, "add"), 2, a), 0, &err) == NULL,
              "over the step limit in a run of levels");
    TAP_CHECK(strstr(msg(&err), "add-S (65536 times)") != NULL, "the error names add-S, all its firings: %s",
              msg(&err));
    tg_rules_free(rs);
}

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(rs != NULL, "a rule set");

    /* a file and the file it includes */
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("tests/patterns/data/fib.rules"), &err), 0, "load fib.rules");
    TAP_EQ_STR(tap_show(nf(ctx, rs, "(fib (s (s (s (s (s d0))))))", 0)), "(s (s (s (s (s d0)))))", "fib 5");
    TAP_EQ_STR(tap_show(nf(ctx, rs, "(fib (s (s (s (s (s d0))))))", TG_NF_MEMO)), "(s (s (s (s (s d0)))))",
               "fib 5 with memo");
    unsigned long long rw, cond;
    /* fib 20: longer than memo's lazy start (memo.h: some 2000 calls
     * not looked up), after which memo finds its repeated calls */
    static const char fib20[] = "(fib (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s (s d0)))))))))))))))))))))";
    nf(ctx, rs, fib20, 0);
    tg_rules_counts(rs, &rw, &cond);
    unsigned long long plain = rw;
    nf(ctx, rs, fib20, TG_NF_MEMO);
    tg_rules_counts(rs, &rw, &cond);
    TAP_CHECK(rw < plain, "memo saves rewrites (%llu < %llu)", rw, plain);

    /* an error names the offending subterm's line and column; nothing of
     * the file stays */
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("tests/patterns/data/bad.rules"), &err), -1, "bad.rules");
    TAP_EQ_STR(msg(&err), "bad.rules:4:10: unknown op frob (declare it with (op frob ...)) in (frob ?x)",
               "error at the subterm");
    TAP_EQ_STR(tap_show(nf(ctx, rs, "(twice (s d0))", 0)), "(twice (s d0))", "the good rule before it is gone");
    TAP_EQ_INT(tg_rules_load_string(rs, "(op twice (arity 1))", 20, NULL, &err), 0,
               "the op it declared is gone too: declaring it again differently is fine");

    /* include cycles */
    TAP_EQ_INT(tg_rules_load_file(rs, tap_path("tests/patterns/data/cycle-a.rules"), &err), -1, "cycle");
    TAP_EQ_STR(msg(&err), "cycle-b.rules:2:1: include cycle: cycle-a.rules -> cycle-b.rules -> cycle-a.rules",
               "the cycle is named");
    TAP_EQ_INT(tg_rules_load_string(rs, "(op zz (arity 2))", 17, NULL, &err), 0, "zz was rolled back");

    /* a missing include */
    const char *mi = "(include \"no-such-file.rules\")";
    TAP_EQ_INT(tg_rules_load_string(rs, mi, strlen(mi), "m.rules", &err), -1, "missing include");
    TAP_CHECK(strstr(err.message, "cannot include no-such-file.rules") != NULL, "message: %s", err.message);
    TAP_EQ_INT(err.line, 1, "line of the include");

    /* rewriters through the API, with the profile and a trace */
    const char *db = "(op mul (arity 2) comm) (op true_div (arity 2))\n"
                     "(rule mul-div (true_div (mul ?x ?y) ?y) => ?x)\n"
                     "(equilibrium canon mul-div)";
    TAP_EQ_INT(tg_rules_load_string(rs, db, strlen(db), "db.rules", &err), 0, "db");
    tg_term *spec = tg_read_cstr(ctx, "canon", &err);
    tg_term *in = tg_read_cstr(ctx, "(true_div (mul y x) y)", &err);
    FILE *tr = tmpfile();
    tg_rules_set_trace(rs, tr, 1);
    TAP_EQ_STR(tap_show(tg_rewrite(rs, spec, in, &err)), "x", "x*y/y");
    tg_rules_set_trace(rs, NULL, 0);
    char line[256] = "";
    rewind(tr);
    if (!fgets(line, sizeof line, tr))
        line[0] = 0;
    fclose(tr);
    TAP_EQ_STR(line, "mul-div: (true_div (mul x y) y) => x\n", "trace line");
    TAP_EQ_STR(tap_show(tg_rules_profile(rs)),
               "(profile canon (passes 2) (nodes 2 0 2) (rewrites 1) (conditions 0) (rules (mul-div 1 0)) (never-fired))",
               "profile");
    tg_term *q = tg_read_cstr(ctx, "(query canon (exclude mul-div))", &err);
    TAP_EQ_STR(tap_show(tg_rewrite(rs, q, in, &err)), "(true_div (mul y x) y)", "query");
    tg_term *nosuch = tg_read_cstr(ctx, "nosuch", &err);
    TAP_CHECK(tg_rewrite(rs, nosuch, in, &err) == NULL, "unknown rewriter");
    TAP_EQ_STR(err.message, "unknown rewriter nosuch (declare it with equilibrium, walk or sequence)",
               "its message");

    /* tg_rules_eval */
    tg_term *v = NULL;
    tg_term *form = tg_read_cstr(ctx, "(normalize (plus (s d0) (s d0)))", &err);
    TAP_EQ_INT(tg_rules_eval(rs, form, NULL, NULL, &v, &err), TG_EVAL_VALUE, "eval normalize");
    TAP_EQ_STR(tap_show(v), "(s (s d0))", "its value");
    form = tg_read_cstr(ctx, "(rule r9 (frob ?x) => ?x)", &err);
    TAP_EQ_INT(tg_rules_eval_at(rs, form, "f.rules", 7, 3, NULL, NULL, &v, &err), -1, "eval a bad rule");
    TAP_EQ_STR(msg(&err), "f.rules:7:3: unknown op frob (declare it with (op frob ...)) in (frob ?x)",
               "at the position given");

    /* bad arguments */
    TAP_CHECK(tg_rules_new(NULL, &err) == NULL, "no context");
    TAP_CHECK(tg_rules_load_string(NULL, "x", 1, NULL, &err) < 0, "no rule set");
    TAP_CHECK(tg_rules_load_file(rs, "/no/such/file.rules", &err) < 0, "no such file");
    TAP_CHECK(tg_normalize(rs, NULL, 0, &err) == NULL, "normalize NULL");
    TAP_CHECK(tg_rewrite(rs, NULL, in, &err) == NULL, "rewrite NULL");
    TAP_CHECK(tg_rules_eval(rs, NULL, NULL, NULL, &v, &err) < 0, "eval NULL");

    /* a chain a million deep normalizes without the C stack */
    const char *deep = "(op g (arity 1)) (op h (arity 1)) (rule g-h (g ?x) => (h ?x))";
    TAP_EQ_INT(tg_rules_load_string(rs, deep, strlen(deep), NULL, &err), 0, "g-h");
    tg_term *t = tg_symbol_cstr(ctx, "z");
    tg_term *g = tg_symbol_cstr(ctx, "g"), *h = tg_symbol_cstr(ctx, "h");
    tg_term *e = t;
    for (int i = 0; i < 1000000; i++) {
        t = tg_app(ctx, g, 1, &t);
        e = tg_app(ctx, h, 1, &e);
    }
    TAP_CHECK(tg_normalize(rs, t, 0, &err) == e, "a million nested rewrites");
    TAP_CHECK(tg_normalize(rs, t, TG_NF_MEMO, &err) == e, "the same with memo");

    tg_rules_free(rs);
    ctor_recursions(ctx);
    ctor_recursions_sources(ctx);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
