/* test_typed.c - the typed guards of rules (type:dtype ..., doc/rules.md)
 * in the compile pipeline: tg_fn_compile gives a rule set the tensor
 * types for its rewrite (and takes them back after), on the compiled and
 * the interpreted path, through the rewrite cache (a rule set whose
 * guards are typed is cached, and each graph gets its own rewrite), the
 * checking mode and validation; tg_rules_tensor_types turns them on and
 * off for tg_rewrite.  tests/patterns/typed.test has each built-in. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kt.h"

static char dir[] = "/tmp/tgrel-typed-test-XXXXXX";

/* exp x -> neg x, but only for a float32 x: a wrong rule (the checking
 * mode names it), whose firing tells whether the guard saw the type */
static const char *rules_text = "(op exp (arity 1)) (op neg (arity 1))\n"
                                "(rule exp-f32 (exp ?x) => (neg ?x) (when (== (type:dtype ?x) float32)))\n"
                                "(walk default exp-f32)\n";

/* exp of input x of dtype dt (one element, 1.0), through rs: its value. */
static double run(tg_ctx *ctx, tg_rules *rs, const char *dt, int interpret, int check, tg_fn_stats *st,
                  tg_error *err)
{
    char text[200];
    snprintf(text, sizeof text, "(input x %s (1)) (exp (input x %s (1)))", dt, dt);
    tg_term *t[2];
    if (kt_read_terms(ctx, text, t, err) != 2)
        return NAN;
    tg_fn_options o = {.interpret = interpret, .rules = rs, .check = check};
    tg_fn *fn = tg_fn_compile(ctx, 1, &t[0], 1, &t[1], &o, err);
    if (!fn)
        return NAN;
    if (st)
        tg_fn_profile(fn, st);
    double v = NAN;
    float xf = 1.0f;
    double xd = 1.0;
    int64_t one = 1;
    tg_array in, out;
    tg_array_init(&in, !strcmp(dt, "float32") ? TG_FLOAT32 : TG_FLOAT64, 1, &one,
                  !strcmp(dt, "float32") ? (void *)&xf : (void *)&xd);
    memset(&out, 0, sizeof out);
    if (tg_fn_call(fn, &in, &out, err) == 0)
        v = out.dtype == TG_FLOAT32 ? *(float *)out.data : *(double *)out.data;
    free(out.data);
    tg_fn_free(fn);
    return v;
}

/* What tg_rewrite makes of (exp (input x float32 (1))) with rs. */
static tg_term *rewrite(tg_ctx *ctx, tg_rules *rs, tg_error *err)
{
    tg_term *t = tg_read_cstr(ctx, "(exp (input x float32 (1)))", err);
    return t ? tg_rewrite(rs, tg_symbol_cstr(ctx, "default"), t, err) : NULL;
}

int main(void)
{
    tg_error err;
    if (!mkdtemp(dir))
        return 1;
    setenv("TGREL_CACHE_DIR", dir, 1);
    tg_ctx *ctx = tg_ctx_new(&err);
    tg_rules *rs = tg_rules_new(ctx, &err);
    TAP_CHECK(rs && tg_rules_load_string(rs, rules_text, strlen(rules_text), NULL, &err) == 0, "the rules load");
    tg_term *unchanged = tg_read_cstr(ctx, "(exp (input x float32 (1)))", &err);
    tg_term *fired = tg_read_cstr(ctx, "(neg (input x float32 (1)))", &err);

    /* a rule set never given the types: its guard declines */
    TAP_CHECK(rewrite(ctx, rs, &err) == unchanged, "without tensor types the guard declines: the rule does not fire");

    KT_EACH_PATH {
        /* the pipeline gives the types: the guard sees each input's dtype */
        tg_fn_stats st;
        double a = run(ctx, rs, "float32", kt_path, 0, &st, &err);
        TAP_CHECK(a == -1.0, "a float32 x: the guard holds, the rule fires: %g", a);
        double b = run(ctx, rs, "float64", kt_path, 0, NULL, &err);
        TAP_CHECK(fabs(b - exp(1.0)) < 1e-12, "a float64 x: the guard fails, exp stays: %g", b);
        /* cached (the guards are the library's code, versioned with it), and
         * each graph has its own entry */
        tg_fn_stats st2;
        double c = run(ctx, rs, "float32", kt_path, 0, &st2, &err);
        TAP_CHECK(c == -1.0 && st2.rewrite_cached, "compiled again: the rewrite comes from the cache (%d), %g",
                  st2.rewrite_cached, c);
        double d = run(ctx, rs, "float64", kt_path, 0, NULL, &err);
        TAP_CHECK(fabs(d - exp(1.0)) < 1e-12, "and the float64 graph still its own: %g", d);
        /* the checking mode's rerun sees the types too: it names the rule */
        tg_error_clear(&err);
        double e = run(ctx, rs, "float32", kt_path, 1, NULL, &err);
        TAP_CHECK(isnan(e) && err.code == TG_ERR_CHECK && strstr(err.message, "exp-f32"),
                  "the checking mode names the typed rule: %s", err.message);
        /* the rule set is as it was after each compile */
        TAP_CHECK(rewrite(ctx, rs, &err) == unchanged, "after the compile the rule set has no types again");
    }

    TAP_CHECK(tg_rules_tensor_types(rs, 1, &err) == 0 && rewrite(ctx, rs, &err) == fired,
              "tg_rules_tensor_types on: tg_rewrite's guard sees the type");
    /* a compile keeps the types a rule set had */
    run(ctx, rs, "float64", 1, 0, NULL, &err);
    TAP_CHECK(rewrite(ctx, rs, &err) == fired, "a compile leaves a typed rule set typed");
    TAP_CHECK(tg_rules_tensor_types(rs, 0, &err) == 0 && rewrite(ctx, rs, &err) == unchanged,
              "tg_rules_tensor_types off: it declines again");
    TAP_CHECK(tg_rules_tensor_types(NULL, 1, &err) == -1 && strstr(err.message, "NULL"),
              "a NULL rule set is an error: %s", err.message);

    /* validation still refuses a typed rule that changes an output's type */
    tg_rules *bad = tg_rules_new(ctx, &err);
    const char *bad_text = "(op exp (arity 1)) (op cast (arity 2))\n"
                           "(rule exp-cast (exp ?x) => (cast ?x int64) (when (type:float ?x)))\n"
                           "(walk default exp-cast)\n";
    TAP_CHECK(bad && tg_rules_load_string(bad, bad_text, strlen(bad_text), NULL, &err) == 0, "a wrong typed rule loads");
    tg_error_clear(&err);
    double v = run(ctx, bad, "float64", 1, 0, NULL, &err);
    TAP_CHECK(isnan(v) && err.code == TG_ERR_TYPE && strstr(err.message, "exp-cast"),
              "validation names it: %s", err.message);
    tg_rules_free(bad);

    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    TAP_CHECK(system(cmd) == 0, "clean up");
    tg_rules_free(rs);
    tg_ctx_free(ctx);
    return TAP_DONE();
}
