/* test_limits.c - tg_rules_set_limits: ping-pong rules and a growing
 * equilibrium stop at the step limit and at the time limit, through
 * tg_normalize, tg_rewrite and an evaluated form, with an error that names
 * the rules that kept firing; a search stops at the time limit; without
 * limits an ordinary rewrite is unchanged; bad arguments are refused. */
#include <string.h>

#include "harness.h"
#include "tgrel.h"

static const char rules[] =
    "(op grow (arity 1)) (op s (arity 1)) (op ping (arity 1)) (op pong (arity 1)) (op f (arity 1))\n"
    "(rule g (grow ?x) => (grow (s ?x)))\n"
    "(equilibrium e2 g)\n"
    "(rule p1 (ping ?x) => (pong ?x))\n"
    "(rule p2 (pong ?x) => (ping ?x))\n"
    "(rule fa (f a) => b)\n"
    "(defrel (loopo x) (loopo x))\n";

int main(void)
{
    tg_error err;
    tg_error_clear(&err);
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(tg_rules_load_string(rs, rules, sizeof rules - 1, "limits", &err) == 0, "rules load");

    TAP_EQ_INT(tg_rules_set_limits(NULL, 1, 0, &err), -1, "a NULL rule set is refused");
    TAP_EQ_INT(tg_rules_set_limits(rs, 0, -1, &err), -1, "a negative time is refused");
    TAP_EQ_INT(err.code, TG_ERR_ARG, "... as a bad argument");

    TAP_EQ_INT(tg_rules_set_limits(rs, 100000, 0, &err), 0, "a step limit of 10^5 rewrites");
    tg_error_clear(&err);
    tg_term *r = tg_normalize(rs, tg_read_cstr(ctx, "(ping a)", &err), 0, &err);
    TAP_CHECK(!r && err.code == TG_ERR_RANGE && strstr(err.message, "step limit") &&
                  strstr(err.message, "p1") && strstr(err.message, "p2"),
              "ping-pong rules stop, the error names both (%s)", err.message);
    tg_error_clear(&err);
    r = tg_rewrite(rs, tg_symbol_cstr(ctx, "e2"), tg_read_cstr(ctx, "(grow a)", &err), &err);
    TAP_CHECK(!r && strstr(err.message, "step limit") && strstr(err.message, " g ("),
              "a growing equilibrium stops, the error names its rule (%s)", err.message);
    tg_error_clear(&err);
    r = tg_normalize(rs, tg_read_cstr(ctx, "(f a)", &err), 0, &err);
    TAP_CHECK(r == tg_symbol_cstr(ctx, "b"), "an ordinary rewrite under the limit runs");

    TAP_EQ_INT(tg_rules_set_limits(rs, 0, 0.2, &err), 0, "a time limit of 0.2 s");
    tg_error_clear(&err);
    tg_term *v = NULL;
    int rc = tg_rules_eval(rs, tg_read_cstr(ctx, "(normalize (ping a))", &err), NULL, NULL, &v, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "time limit") && strstr(err.message, "p1"),
              "an evaluated normalize form stops at the time limit (%s)", err.message);
    tg_error_clear(&err);
    rc = tg_rules_eval(rs, tg_read_cstr(ctx, "(run 1 (q) (loopo q))", &err), NULL, NULL, NULL, &err);
    TAP_CHECK(rc < 0 && strstr(err.message, "time limit"), "a search that never ends stops too (%s)",
              err.message);

    TAP_EQ_INT(tg_rules_set_limits(rs, 0, 0, &err), 0, "no limits");
    tg_error_clear(&err);
    r = tg_normalize(rs, tg_read_cstr(ctx, "(f a)", &err), 0, &err);
    TAP_CHECK(r == tg_symbol_cstr(ctx, "b"), "rewriting without limits is unchanged");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
