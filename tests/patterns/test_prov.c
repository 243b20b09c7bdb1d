/* test_prov.c - the provenance API: switching it on and off, the why
 * chain as a term and printed, the cap on the log, deep terms, and bad
 * arguments. */
#include "harness.h"
#include "tgrel.h"
#include "tgtest.h"

#ifndef DEEP
#define DEEP 1000000
#endif

static tg_term *rd(tg_ctx *ctx, const char *text)
{
    tg_error err;
    return tg_read_cstr(ctx, text, &err);
}

/* What tg_rules_print_why prints, in a static buffer. */
static const char *printed(tg_rules *rs, tg_term *t, int *rc)
{
    static char buf[4096];
    tg_error err;
    FILE *f = tmpfile();
    if (!f)
        return "(no tmpfile)";
    *rc = tg_rules_print_why(rs, t, f, &err);
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static const char *rules =
    "(op neg (arity 1)) (op true_div (arity 2)) (op mul (arity 2) comm)"
    "(op s (arity 1)) (op lt (arity 2))"
    "(rule neg-neg (neg (neg ?x)) => ?x)"
    "(rule mul-div-cancel (true_div (mul ?x ?y) ?y) => ?x)"
    "(rule lt-s (lt (s ?x) (s ?y)) => (lt ?x ?y))"
    "(rule lt-z (lt z (s ?y)) => true)"
    "(equilibrium canon neg-neg mul-div-cancel)";

int main(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_EQ_INT(tg_rules_load_string(rs, rules, strlen(rules), NULL, &err), 0, "rules");

    /* off by default: no log, and why says how to switch it on */
    TAP_EQ_INT(tg_rules_provenance(rs), 0, "off by default");
    tg_term *in = rd(ctx, "(pair (true_div (mul (neg (neg a)) b) b) (neg (neg c)))");
    tg_term *out = tg_normalize(rs, in, 0, &err);
    TAP_EQ_STR(tap_show(out), "(pair a c)", "normal form");
    TAP_CHECK(tg_rules_why(rs, out, &err) == NULL, "why with provenance off");
    TAP_CHECK(strstr(err.message, "provenance is off") != NULL, "message: %s", err.message);

    /* on: the chain of a subterm, and of the whole result */
    TAP_EQ_INT(tg_rules_set_provenance(rs, 1, 0, &err), 0, "switch on");
    TAP_EQ_INT(tg_rules_provenance(rs), 1, "on");
    TAP_CHECK(tg_rules_why(rs, out, &err) == NULL, "no result yet");
    TAP_CHECK(strstr(err.message, "no result to explain") != NULL, "message: %s", err.message);
    TAP_CHECK(tg_normalize(rs, in, 0, &err) == out, "the same normal form with provenance on");
    TAP_EQ_STR(tap_show(tg_rules_why(rs, rd(ctx, "a"), &err)),
               "(why a (firings 3 3) (1 neg-neg (pass 1) (at 1 1 2) (neg (neg a)) a)"
               " (2 mul-div-cancel (pass 1) (at 1) (true_div (mul a b) b) a))",
               "why a: a chain of two");
    TAP_EQ_STR(tap_show(tg_rules_why(rs, out, &err)),
               "(why (pair a c) (firings 3 3) (1 neg-neg (pass 1) (at 1 1 2) (neg (neg a)) a)"
               " (2 mul-div-cancel (pass 1) (at 1) (true_div (mul a b) b) a)"
               " (3 neg-neg (pass 1) (at 2) (neg (neg c)) c))",
               "why the result: two branches");
    int rc;
    TAP_EQ_STR(printed(rs, rd(ctx, "c"), &rc),
               "why c: 1 firing\n  #3 neg-neg, pass 1, at (2): (neg (neg c)) => c\n", "printed");
    TAP_EQ_INT(rc, 0, "print rc");

    /* a term that is not in the result */
    TAP_CHECK(tg_rules_why(rs, rd(ctx, "(neg (neg a))"), &err) == NULL, "not a subterm");
    TAP_EQ_STR(err.message, "(neg (neg a)) is not a subterm of the last result", "message");
    TAP_EQ_STR(printed(rs, rd(ctx, "zz"), &rc), "", "nothing printed on an error");
    TAP_EQ_INT(rc, -1, "print rc on an error");

    /* a rewrite replaces the log; the result with no firing has an empty chain */
    TAP_EQ_STR(tap_show(tg_rewrite(rs, rd(ctx, "canon"), rd(ctx, "(f b)"), &err)), "(f b)", "rewrite");
    TAP_EQ_STR(tap_show(tg_rules_why(rs, rd(ctx, "(f b)"), &err)), "(why (f b) (firings 0 0))",
               "no firing");
    TAP_EQ_STR(tap_show(tg_rewrite(rs, rd(ctx, "canon"), rd(ctx, "(f (neg (neg b)))"), &err)), "(f b)",
               "rewrite");
    TAP_EQ_STR(tap_show(tg_rules_why(rs, rd(ctx, "(f b)"), &err)),
               "(why (f b) (firings 1 1) (1 neg-neg (pass 1) (at 1) (neg (neg b)) b))", "rewrite why");

    /* the cap: firings past it are counted, not logged */
    TAP_EQ_INT(tg_rules_set_provenance(rs, 1, 2, &err), 0, "cap 2");
    tg_term *lt = tg_normalize(rs, rd(ctx, "(lt (s (s (s z))) (s (s (s (s z)))))"), 0, &err);
    TAP_EQ_STR(tap_show(lt), "true", "lt");
    TAP_EQ_STR(tap_show(tg_rules_why(rs, lt, &err)), "(why true (firings 2 4))",
               "the firing that gave the result is past the cap");
    TAP_EQ_STR(printed(rs, lt, &rc),
               "why true: 0 firings\n  (the log holds the first 2 of 4 firings: the chain may be cut short)\n",
               "the cap is said");

    /* deep terms: a chain of a million tail calls, and a million nested firings */
    TAP_EQ_INT(tg_rules_set_provenance(rs, 1, 2000000, &err), 0, "a cap of two million");
    tg_term *s = tg_symbol_cstr(ctx, "s"), *neg = tg_symbol_cstr(ctx, "neg");
    tg_term *x = tg_symbol_cstr(ctx, "z"), *y = tg_app(ctx, s, 1, &x);
    tg_term *d = tg_symbol_cstr(ctx, "a");
    for (int i = 0; i < DEEP; i++) {
        x = tg_app(ctx, s, 1, &x);
        y = tg_app(ctx, s, 1, &y);
    }
    for (int i = 0; i < DEEP / 4; i++)     /* 250000 nested firings */
        d = tg_app(ctx, neg, 1, &d);
    tg_term *args[2] = {x, y};
    tg_term *w = tg_rules_why(rs, tg_normalize(rs, tg_app(ctx, tg_symbol_cstr(ctx, "lt"), 2, args), 0, &err),
                              &err);
    TAP_EQ_INT((long long)tg_length(w), DEEP + 1 + 3, "every firing of the chain");
    TAP_CHECK(tg_normalize(rs, d, 0, &err) == tg_symbol_cstr(ctx, "a"), "250000 nested negations");
    w = tg_rules_why(rs, tg_symbol_cstr(ctx, "a"), &err);
    TAP_EQ_INT((long long)tg_length(w), DEEP / 8 + 3, "every firing of the nested chain");
    char want[600];
    snprintf(want, sizeof want, "(at (skip %d)", DEEP / 4 - 2 - 32);
    for (int i = 0; i < 32; i++)
        strcat(want, " 1");
    strcat(want, ")");
    TAP_EQ_STR(tap_show(tg_nth(tg_nth(w, 3), 3)), want, "a deep position: its depth and innermost 32 indices");

    /* switching off drops the log; a .rules form switches too */
    TAP_EQ_INT(tg_rules_set_provenance(rs, 0, 0, &err), 0, "switch off");
    TAP_CHECK(tg_rules_why(rs, tg_symbol_cstr(ctx, "a"), &err) == NULL, "no log once off");
    tg_term *v = NULL;
    TAP_EQ_INT(tg_rules_eval(rs, rd(ctx, "(provenance on)"), NULL, NULL, &v, &err), TG_EVAL_DEFINE,
               "(provenance on)");
    TAP_EQ_INT(tg_rules_provenance(rs), 1, "on by a form");
    tg_normalize(rs, rd(ctx, "(neg (neg q))"), 0, &err);
    TAP_EQ_INT(tg_rules_eval(rs, rd(ctx, "(why q)"), NULL, NULL, &v, &err), TG_EVAL_VALUE,
               "(why q) without a trace stream is a value");
    TAP_EQ_STR(tap_show(v), "(why q (firings 1 1) (1 neg-neg (pass 1) (at) (neg (neg q)) q))", "its value");
    TAP_EQ_INT(tg_rules_eval(rs, rd(ctx, "(provenance off)"), NULL, NULL, &v, &err), TG_EVAL_DEFINE,
               "(provenance off)");
    TAP_EQ_INT(tg_rules_provenance(rs), 0, "off by a form");

    /* bad arguments */
    TAP_EQ_INT(tg_rules_set_provenance(NULL, 1, 0, &err), -1, "set NULL");
    TAP_EQ_STR(err.message, "tg_rules_set_provenance: NULL rule set", "message");
    TAP_CHECK(tg_rules_why(NULL, out, &err) == NULL, "why NULL rule set");
    TAP_CHECK(tg_rules_why(rs, NULL, &err) == NULL, "why NULL term");
    TAP_EQ_STR(err.message, "tg_rules_why: NULL argument", "message");
    TAP_EQ_INT(tg_rules_print_why(rs, out, NULL, &err), -1, "print to NULL");
    TAP_EQ_INT(tg_rules_provenance(NULL), 0, "NULL rule set: off");

    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
