/* test_validate.c - validated replacements: a rewrite for a compile that
 * changes an output's dtype, rank, static size or broadcast pattern is
 * refused with an error naming the rule, the node and both types, on a
 * cache miss and never stored (so a second compile is refused too); the
 * rule set's provenance is left as it was; rewrites that keep the types
 * (the library's, x*y/y -> x dropping a size) compile and compute what
 * the unrewritten graph computes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kt.h"

static char dir[] = "/tmp/tgrel-validate-test-XXXXXX";

#define OPS                                                                                          \
    "(op exp (arity 1)) (op sin (arity 1)) (op add (arity 2+) assoc comm) (op mul (arity 2+) assoc comm) "             \
    "(op true_div (arity 2)) (op sum (arity 2)) (op transpose (arity 1)) (op cast (arity 2)) "             \
    "(op axes (arity 1+)) "

/* Compile outs over ins with the rules text's default rewriter: the
 * function, or NULL with err filled. */
static tg_fn *compile_with(tg_ctx *ctx, tg_rules *rs, const char *ins, const char *outs, tg_error *err)
{
    tg_term *in = tg_read_cstr(ctx, ins, err), *out = tg_read_cstr(ctx, outs, err);
    if (!in || !out)
        return NULL;
    tg_term *iv[8], *ov[8];
    size_t ni = tg_elements(in, iv, 8), no = tg_elements(out, ov, 8);
    tg_fn_options o = {.rules = rs};
    return tg_fn_compile(ctx, ni, iv, no, ov, &o, err);
}

static const struct refused {
    const char *what, *rules, *ins, *outs, *rule, *from, *to;
} refused[] = {
    {"a float64 vector made the int64 scalar 14", "(rule bad (exp ?x) => 14) (equilibrium default bad)",
     "((input x float64 (n)))", "((exp (input x float64 (n))))", "bad", "float64 (n)", "int64 ()"},
    {"a matrix transposed", "(rule tr (exp ?x) => (sin (transpose ?x))) (equilibrium default tr)",
     "((input x float64 (n m)))", "((exp (input x float64 (n m))))", "tr", "float64 (n m)", "float64 (m n)"},
    {"a static size changed", "(rule tr (exp ?x) => (sin (transpose ?x))) (equilibrium default tr)",
     "((input x float64 (2 3)))", "((exp (input x float64 (2 3))))", "tr", "float64 (2 3)", "float64 (3 2)"},
    {"a rank dropped", "(rule s (exp ?x) => (sum (sin ?x) (axes 0))) (equilibrium default s)",
     "((input x float64 (n m)))", "((exp (input x float64 (n m))))", "s", "float64 (n m)", "float64 (m)"},
    {"a broadcast pattern changed",
     "(rule b (exp ?x) => (add (sin ?x) (mul 0 '(input y float64 (n k))))) (equilibrium default b)",
     "((input x float64 (n 1)) (input y float64 (n k)))", "((exp (input x float64 (n 1))))", "b",
     "float64 (n 1)", "float64 (n k)"},
    {"a dtype narrowed inside", "(rule c (exp ?x) => (sin (cast ?x float32))) (equilibrium default c)",
     "((input x float64 (n)))", "((add 1 (exp (input x float64 (n)))))", "c", "float64 (n)", "float32 (n)"},
};

static void test_refused(void)
{
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++) {
        const struct refused *c = &refused[k];
        tg_error err;
        tg_ctx *ctx = tg_ctx_new(&err);
        char text[1000];
        snprintf(text, sizeof text, OPS "%s", c->rules);
        tg_rules *rs = kt_rules(ctx, text, "bad.rules");
        tg_error_clear(&err);
        tg_fn *fn = rs ? compile_with(ctx, rs, c->ins, c->outs, &err) : NULL;
        char rule[64];
        snprintf(rule, sizeof rule, "rule %s ", c->rule);
        TAP_CHECK(rs && !fn && err.code == TG_ERR_TYPE && strstr(err.message, rule) &&
                      strstr(err.message, c->from) && strstr(err.message, c->to) &&
                      strstr(err.message, "refused"),
                  "%s: refused, naming the rule and both types (%s)", c->what, err.message);
        TAP_CHECK(err.file && strstr(err.file, "bad.rules") && err.line == 1,
                  "%s: the error points at the rule (%s:%d)", c->what, err.file ? err.file : "-", err.line);
        TAP_CHECK(rs && !tg_rules_provenance(rs), "%s: the rule set's provenance stays off", c->what);
        tg_error_clear(&err);
        fn = rs ? compile_with(ctx, rs, c->ins, c->outs, &err) : NULL;
        TAP_CHECK(!fn && strstr(err.message, rule), "%s: refused again (nothing was cached)", c->what);
        tg_fn_free(fn);
        tg_rules_free(rs);
        tg_ctx_free(ctx);
    }
}

/* With provenance on, the user's setting stays on. */
static void test_provenance_kept(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, OPS "(rule bad (exp ?x) => 14) (equilibrium default bad)", "bad.rules");
    TAP_CHECK(rs && tg_rules_set_provenance(rs, 1, 0, &err) == 0, "provenance on");
    tg_fn *fn = rs ? compile_with(ctx, rs, "((input x float64 (n)))", "((exp (input x float64 (n))))", &err) : NULL;
    TAP_CHECK(!fn && strstr(err.message, "rule bad "), "refused (%s)", err.message);
    TAP_CHECK(rs && tg_rules_provenance(rs), "and provenance is still on");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* Rewrites that keep the types compile and compute the same values. */
static void test_kept(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, OPS "(rule mdc (true_div (mul ?x ?y) ?y) => ?x) (equilibrium default mdc)", "bad.rules");
    /* x*y/y -> x: y's size k leaves the output's class, which still has n */
    tg_fn *fn = rs ? compile_with(ctx, rs, "((input x float64 (n)) (input y float64 (k)))",
                                  "((true_div (mul (input x float64 (n)) (input y float64 (k))) (input y float64 (k))))",
                                  &err)
                   : NULL;
    if (!fn)
        tap_diag("%s", err.message);
    double x[3] = {1, 2, 3}, y[3] = {4, 5, 6}, o[3];
    int64_t n = 3;
    tg_array in[2], out;
    tg_array_init(&in[0], TG_FLOAT64, 1, &n, x);
    tg_array_init(&in[1], TG_FLOAT64, 1, &n, y);
    tg_array_init(&out, TG_FLOAT64, 1, &n, o);
    int ok = fn && tg_fn_call(fn, in, &out, &err) == 0;
    for (int i = 0; ok && i < 3; i++)
        ok = o[i] == x[i];
    TAP_CHECK(ok, "x*y/y -> x with a size dropped from the class: compiled, x");
    tg_fn_free(fn);
    tg_rules_free(rs);
    /* the library's default on a graph of many ops */
    rs = tg_rules_new(ctx, &err);
    ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    const char *outs = "((add (mul (mul (exp (input x float64 (n m))) 1) 2) 0)"
                       " (sum (true_div (mul (input x float64 (n m)) (input y float64 (n m))) (input y float64 (n m))) (axes 1)))";
    fn = ok ? compile_with(ctx, rs, "((input x float64 (n m)) (input y float64 (n m)))", outs, &err) : NULL;
    TAP_CHECK(fn != NULL, "the library's rewrites keep every type (%s)", fn ? "" : err.message);
    tg_fn_free(fn);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    test_refused();
    test_provenance_kept();
    test_kept();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    return TAP_DONE();
}
