/* test_check.c - the checking mode (tg_fn_options.check): a function
 * compiled from rewritten terms is compared on every call with the
 * unrewritten graph run in the interpreter; a wrong rule is named with
 * its file:line, on the compiled and the interpreted path, also when it
 * fired among right ones and when the rewrite came from the cache; the
 * library's fast_math x*0 -> 0 is caught on an infinite input; right
 * rules pass call after call; a bad tolerance is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kt.h"

static char dir[] = "/tmp/tgrel-check-test-XXXXXX";

#define OPS                                                                                        \
    "(op exp (arity 1)) (op expm1 (arity 1)) (op add (arity 2+) assoc comm) "                      \
    "(op mul (arity 2+) assoc comm)\n"

/* Compile outs (one term) over x (n) with the rules text's default
 * rewriter; NULL with err filled. */
static tg_fn *compile(tg_ctx *ctx, tg_rules *rs, const char *outs, int check, double tol, int interpret,
                      const unsigned char *kept, tg_error *err)
{
    tg_term *x = tg_read_cstr(ctx, "(input x float64 (n))", err), *o = tg_read_cstr(ctx, outs, err);
    tg_fn_options opt = {.kept = kept, .interpret = interpret, .rules = rs, .check = check, .check_tol = tol};
    return x && o ? tg_fn_compile(ctx, 1, &x, 1, &o, &opt, err) : NULL;
}

/* Call fn on x; the result code, out[0..n) filled. */
static int call(tg_fn *fn, double *x, double *out, int64_t n, tg_error *err)
{
    tg_array in, o;
    tg_array_init(&in, TG_FLOAT64, 1, &n, x);
    tg_array_init(&o, TG_FLOAT64, 1, &n, out);
    return fn ? tg_fn_call(fn, &in, &o, err) : -1;
}

static const char wrong_rules[] = OPS
    "(rule mul-one (mul 1 ?x) => ?x)\n"
    "(rule wrong (exp ?x) => (expm1 ?x))\n"
    "(equilibrium default mul-one wrong)\n";

static void test_wrong_rule(int interpret)
{
    const char *path = interpret ? "interpreted" : "compiled";
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, wrong_rules, "wrong.rules");
    double x[4] = {0.5, 1, 2, -1}, out[4] = {0};
    for (int pass = 0; pass < 2; pass++) {  /* the second compile's rewrite is a cache hit */
        tg_error_clear(&err);
        tg_fn *fn = rs ? compile(ctx, rs, "(add 1 (mul 1 (exp (input x float64 (n)))))", 1, 0, interpret, NULL, &err)
                       : NULL;
        TAP_CHECK(fn != NULL, "%s, compile %d: compiled with the check on (%s)", path, pass + 1,
                  fn ? "" : err.message);
        int rc = call(fn, x, out, 4, &err);
        TAP_CHECK(rc == -1 && err.code == TG_ERR_CHECK && strstr(err.message, "rule wrong ") &&
                      strstr(err.message, "(expm1 (input x float64 (n)))") &&
                      strstr(err.message, "(exp (input x float64 (n)))"),
                  "%s, compile %d: the call fails naming the wrong rule and its terms (%s)", path, pass + 1,
                  err.message);
        TAP_CHECK(err.file && !strcmp(err.file, "wrong.rules") && err.line == 3,
                  "%s, compile %d: at the rule's place (%s:%d)", path, pass + 1, err.file ? err.file : "-", err.line);
        TAP_CHECK(kt_close(out[0], 1 + expm1(0.5), KT_ULPS),
                  "%s, compile %d: the outputs are written still (the rewritten graph's)", path, pass + 1);
        tg_fn_free(fn);
    }
    tg_fn *fn = compile(ctx, rs, "(add 1 (mul 1 (exp (input x float64 (n)))))", 0, 0, interpret, NULL, &err);
    TAP_CHECK(fn && call(fn, x, out, 4, &err) == 0, "%s: without the check the wrong values pass", path);
    tg_fn_free(fn);
    TAP_CHECK(rs && !tg_rules_provenance(rs), "%s: the rule set's provenance stays off", path);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

/* The library, checked: right on finite inputs, mul-zero (fast_math)
 * named when an input is infinite. */
static void test_library(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    int ok = rs && tg_rules_load_file(rs, tap_path("patterns/lib/all.rules"), &err) == 0;
    const char *g = "(add (mul (mul (exp (input x float64 (n))) 1) 2) (mul 0 (input x float64 (n))))";
    unsigned char donate[1] = {0};
    tg_fn *fn = ok ? compile(ctx, rs, g, 1, 0, 0, donate, &err) : NULL;
    double x[5], x0[5], out[5];
    int good = fn != NULL, intact = 1;
    for (int k = 0; good && k < 20; k++) {
        for (int i = 0; i < 5; i++)
            x0[i] = x[i] = kt_unif(-3, 3);
        good = call(fn, x, out, 5, &err) == 0 && kt_close(out[2], 2 * exp(x[2]), KT_ULPS);
        intact &= memcmp(x, x0, sizeof x) == 0;
    }
    TAP_CHECK(good, "the library's default, checked: 20 calls on finite inputs pass (%s)", good ? "" : err.message);
    TAP_CHECK(intact, "a donated input is not overwritten under the check");
    x[1] = INFINITY;
    int rc = fn ? call(fn, x, out, 5, &err) : 0;
    TAP_CHECK(rc == -1 && err.code == TG_ERR_CHECK && strstr(err.message, "rule mul-zero"),
              "an infinite input: mul-zero (fast_math: inf*0 is NaN) is named (%s)", err.message);
    TAP_CHECK(err.file && strstr(err.file, "canonicalize.rules"), "in canonicalize.rules (%s:%d)",
              err.file ? err.file : "-", err.line);
    tg_fn_free(fn);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

static void test_tolerance(void)
{
    tg_error err;
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = kt_rules(ctx, wrong_rules, "wrong.rules");
    const double bad[] = {NAN, -1, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tg_error_clear(&err);
        tg_fn *fn = rs ? compile(ctx, rs, "(exp (input x float64 (n)))", 1, bad[i], 0, NULL, &err) : NULL;
        TAP_CHECK(!fn && err.code == TG_ERR_RANGE && strstr(err.message, "tolerance"),
                  "a tolerance of %g is refused (%s)", bad[i], err.message);
        tg_fn_free(fn);
    }
    /* exp(x) and expm1(x) differ by 1: relatively little where exp is large */
    tg_fn *fn = rs ? compile(ctx, rs, "(exp (input x float64 (n)))", 1, 0.5, 0, NULL, &err) : NULL;
    double x[2] = {10, 20}, out[2];
    TAP_CHECK(fn && call(fn, x, out, 2, &err) == 0,
              "a relative tolerance of 0.5 accepts expm1 for exp where exp is large (%s)", fn ? err.message : "");
    tg_fn_free(fn);
    tg_rules_free(rs);
    tg_ctx_free(ctx);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    test_wrong_rule(0);
    test_wrong_rule(1);
    test_library();
    test_tolerance();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    return TAP_DONE();
}
